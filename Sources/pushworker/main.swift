// The allocator is jemalloc (CPushAllocator, linked into this executable): unused memory goes
// back to the kernel ~2 s after it is freed, and an idle worker purges the rest (docs/operations.md
// "Memory", `pushworker-dev chaos --drill hostile-jobs`).
PushworkerCLI.tool.run()
