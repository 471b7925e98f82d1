import PushRuntime
#if canImport(Glibc)
import Glibc
#endif

exit(PushworkerCLI.main(Array(CommandLine.arguments.dropFirst())))
