import PushCore

/// A tiny command-line reader: `--name value`, `--name=value`, boolean `--flag`, and positionals.
///
/// Validate-then-run: a subcommand declares the options it knows, `parse` rejects anything else
/// with a ``UsageError`` (the executable maps it to exit 64).
public struct CommandArguments: Sendable {
    /// Options that take a value, by name without dashes.
    public private(set) var values: [String: [String]] = [:]
    /// Boolean flags present, by name without dashes.
    public private(set) var flags: Set<String> = []
    /// Positional arguments, in order. A lone `-` is a positional (standard input).
    public private(set) var positionals: [String] = []

    /// Parses `arguments` (without the program and subcommand names).
    /// - Parameters:
    ///   - valueOptions: names of options taking a value (repeatable).
    ///   - flagOptions: names of boolean flags. `help` is always accepted.
    public init(_ arguments: [String], valueOptions: Set<String> = [], flagOptions: Set<String> = []) throws(UsageError) {
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("--") {
                if !onlyPositionals, argument.hasPrefix("-"), argument != "-", argument != "-h" {
                    throw Self.unknownOption(argument, known: valueOptions.union(flagOptions))
                }
                if argument == "-h" { flags.insert("help"); continue }
                positionals.append(argument)
                continue
            }
            if argument == "--" { onlyPositionals = true; continue }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if name == "help" || flagOptions.contains(name) {
                if inlineValue != nil { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
            } else if valueOptions.contains(name) {
                if let inlineValue {
                    values[name, default: []].append(inlineValue)
                } else if index < arguments.count {
                    values[name, default: []].append(arguments[index])
                    index += 1
                } else {
                    throw UsageError("--\(name) needs a value")
                }
            } else {
                throw Self.unknownOption("--\(name)", known: valueOptions.union(flagOptions))
            }
        }
    }

    /// `unknown option --strcit (did you mean --strict?)`: the closest known option when one is
    /// close enough to be a typo (a single-dash `-strict` is pointed at `--strict`).
    static func unknownOption(_ argument: String, known: Set<String>) -> UsageError {
        let word = String(argument.drop { $0 == "-" })
        guard let suggestion = known.contains(word) ? word : Suggestion.closest(to: word, in: known.union(["help"])) else {
            return UsageError("unknown option \(argument)")
        }
        return UsageError("unknown option \(argument) (did you mean --\(suggestion)?)")
    }

    /// Whether `--help` (or `-h`) was given.
    public var wantsHelp: Bool { flags.contains("help") }

    /// The last value given for `name`, if any.
    public func value(_ name: String) -> String? { values[name]?.last }

    /// Every value given for a repeatable option.
    public func allValues(_ name: String) -> [String] { values[name] ?? [] }

    /// Whether the boolean flag `name` was given.
    public func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The value of `name` as an integer within `range`, or `defaultValue` when absent.
    public func integer(_ name: String, default defaultValue: Int, in range: ClosedRange<Int> = Int.min...Int.max) throws(UsageError) -> Int {
        guard let text = value(name) else { return defaultValue }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("--\(name) must be a whole number in \(range.lowerBound)...\(range.upperBound), got \(text)")
        }
        return number
    }

    /// The value of `name` as a double, or `defaultValue` when absent.
    public func double(_ name: String, default defaultValue: Double) throws(UsageError) -> Double {
        guard let text = value(name) else { return defaultValue }
        guard let number = Double(text), number.isFinite else { throw UsageError("--\(name) must be a number, got \(text)") }
        return number
    }
}
