import Foundation
import PushCore
import PushEncoding

/// One declared topic, as in `topics/<name>.json` (docs/reference/topics.md): the source of truth that
/// `pushworker topics apply` converges the cluster to.
public struct TopicDeclaration: Sendable, Equatable {
    public var name: String
    public var partitions: Int
    public var replicationFactor: Int
    /// Topic-level configs in file order (`retention.ms`, `cleanup.policy`, …), values as strings.
    public var config: [KeyValue]
    public var key: String
    public var value: String
    public var valueSchema: String?
    public var purpose: String

    public init(name: String, partitions: Int, replicationFactor: Int, config: [KeyValue] = [],
                key: String = "", value: String = "", valueSchema: String? = nil, purpose: String = "") {
        self.name = name; self.partitions = partitions; self.replicationFactor = replicationFactor; self.config = config
        self.key = key; self.value = value; self.valueSchema = valueSchema; self.purpose = purpose
    }

    /// The declared value of config `name`, if any.
    public func configValue(_ name: String) -> String? { config.first { $0.key == name }?.value }
}

/// A `topics/*.json` file that cannot be used.
public struct TopicDeclarationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var reason: String
    public init(file: String, reason: String) { self.file = file; self.reason = reason }
    public var description: String { "\(file): \(reason)" }
}

/// Finds and reads the declared topics.
public enum TopicDeclarations {
    /// Where the Docker image installs them.
    public static let installedDirectory = "/usr/share/pushworker/topics"

    /// The topics folder: `explicit` when given, else `./topics`, else ``installedDirectory``.
    public static func locate(_ explicit: String?, currentDirectory: String = FileManager.default.currentDirectoryPath) -> String? {
        if let explicit { return explicit }
        for candidate in [currentDirectory + "/topics", installedDirectory] {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory), isDirectory.boolValue { return candidate }
        }
        return nil
    }

    /// Where the declarations come from.
    public enum Source: Sendable, Equatable, CustomStringConvertible {
        /// `topics/*.json` files of a folder (`--dir`, `./topics`, the installed folder).
        case directory(String)
        /// The declarations built into the binary (``embedded``, from the repository's topics/).
        case embedded

        public var description: String {
            switch self {
            case .directory(let path): path
            case .embedded: "built into pushworker"
            }
        }
    }

    /// `explicit` (`--dir`) when given, else `./topics`, else ``installedDirectory``, else the
    /// declarations built into the binary: `topics print|apply` work from any directory.
    public static func source(_ explicit: String?, currentDirectory: String = FileManager.default.currentDirectoryPath) -> Source {
        locate(explicit, currentDirectory: currentDirectory).map(Source.directory) ?? .embedded
    }

    /// The declarations of `source`, sorted by name.
    public static func load(_ source: Source) throws(TopicDeclarationError) -> [TopicDeclaration] {
        switch source {
        case .directory(let path): return try load(directory: path)
        case .embedded: return try loadEmbedded()
        }
    }

    /// ``embedded`` parsed, sorted by name.
    public static func loadEmbedded() throws(TopicDeclarationError) -> [TopicDeclaration] {
        var declarations: [TopicDeclaration] = []
        for (file, json) in embedded { declarations.append(try parse(Array(json.utf8), file: "(built in) " + file)) }
        return declarations.sorted { $0.name < $1.name }
    }

    /// Every `*.json` directly in `directory` (schemas live in a sub-folder), sorted by name.
    public static func load(directory: String) throws(TopicDeclarationError) -> [TopicDeclaration] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory) } catch {
            throw TopicDeclarationError(file: directory, reason: "cannot list the folder")
        }
        var declarations: [TopicDeclaration] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            let path = directory + "/" + name
            guard let data = FileManager.default.contents(atPath: path) else {
                throw TopicDeclarationError(file: path, reason: "cannot read")
            }
            declarations.append(try parse([UInt8](data), file: path))
        }
        guard !declarations.isEmpty else { throw TopicDeclarationError(file: directory, reason: "no topics/*.json here") }
        var seen = Set<String>()
        for declaration in declarations where !seen.insert(declaration.name).inserted {
            throw TopicDeclarationError(file: directory, reason: "topic \(declaration.name) is declared twice")
        }
        return declarations.sorted { $0.name < $1.name }
    }

    /// Parses one declaration file.
    public static func parse(_ bytes: [UInt8], file: String) throws(TopicDeclarationError) -> TopicDeclaration {
        let document: JSONValue
        do { document = try JSONParser.parse(bytes) } catch {
            throw TopicDeclarationError(file: file, reason: "invalid JSON: \(error)")
        }
        guard let object = document.objectValue else { throw TopicDeclarationError(file: file, reason: "expected an object") }
        func string(_ key: String, required: Bool = true) throws(TopicDeclarationError) -> String? {
            switch object[key] {
            case .string(let text)?: return text
            case nil, .null?:
                if required { throw TopicDeclarationError(file: file, reason: "\(key) is required") }
                return nil
            default: throw TopicDeclarationError(file: file, reason: "\(key) must be a string")
            }
        }
        func integer(_ key: String) throws(TopicDeclarationError) -> Int {
            guard case .number(let number)? = object[key], let value = number.intValue, (1...100_000).contains(value) else {
                throw TopicDeclarationError(file: file, reason: "\(key) must be a whole number ≥ 1")
            }
            return value
        }
        guard let name = try string("name"), isValidTopicName(name) else {
            throw TopicDeclarationError(file: file, reason: "name must be 1…249 characters of [A-Za-z0-9._-]")
        }
        var config: [KeyValue] = []
        switch object["config"] {
        case nil, .null?: break
        case .object(let members)?:
            for member in members.members {
                switch member.value {
                case .string(let text): config.append(KeyValue(member.key, text))
                case .number(let number): config.append(KeyValue(member.key, number.literal))
                case .bool(let flag): config.append(KeyValue(member.key, flag ? "true" : "false"))
                default: throw TopicDeclarationError(file: file, reason: "config.\(member.key) must be a string, number or boolean")
                }
            }
        default: throw TopicDeclarationError(file: file, reason: "config must be an object")
        }
        return TopicDeclaration(name: name, partitions: try integer("partitions"), replicationFactor: try integer("replicationFactor"),
                                config: config, key: try string("key", required: false) ?? "",
                                value: try string("value", required: false) ?? "",
                                valueSchema: try string("valueSchema", required: false),
                                purpose: try string("purpose", required: false) ?? "")
    }

    /// Kafka's topic name rule: 1…249 of `[A-Za-z0-9._-]`, not `.` or `..`.
    public static func isValidTopicName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 249 && name != "." && name != ".."
            && name.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }
    }
}
