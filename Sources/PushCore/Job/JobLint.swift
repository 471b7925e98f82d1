import PushEncoding
/// A remark about a job that does not make it invalid (`render`, `send` and `enqueue` print
/// them on stderr; `--strict` makes them errors). The worker never computes them.
public struct JobWarning: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        /// A member no field table lists (docs/reference/job.md: the worker ignores it).
        case unknownField = "unknown_field"
        /// A template variable with no value and no default for some recipients (renders empty).
        case templateVariable = "template_variable"
        /// A part of an audience job that its one rendering does not use (docs/reference/job.md).
        case unusedByAudience = "unused_by_audience"
    }

    public var kind: Kind
    /// The first place it occurs, as a JSON path.
    public var path: String
    /// What is wrong there: `unknown field (did you mean body?)`.
    public var message: String
    /// The field probably meant, when there is a good guess.
    public var suggestion: String?
    /// How many more places have the same remark (the same unknown member in other recipients).
    public var moreCount: Int
    /// Where the others are, as a path pattern (`$.recipients[*].deviceToken`).
    public var pattern: String

    public init(kind: Kind, path: String, message: String, suggestion: String? = nil, moreCount: Int = 0, pattern: String? = nil) {
        self.kind = kind; self.path = path; self.message = message; self.suggestion = suggestion
        self.moreCount = moreCount; self.pattern = pattern ?? path
    }

    public var description: String {
        moreCount > 0 ? "\(path): \(message) (and \(moreCount) more: \(pattern))" : "\(path): \(message)"
    }
}

/// Pure checks over a job for the CLI (docs/reference/cli.md): members no field table lists, with a
/// did-you-mean, and template variables that will render empty. Table-tested; nothing here
/// changes what the decoder accepts.
public enum JobLint {
    /// Every warning for a job: unknown fields (from the parsed document), then template
    /// variables (from the decoded job, when it decodes).
    public static func warnings(document: JSONValue, job: FanOutJob?) -> [JobWarning] {
        unknownFields(in: document) + (job.map(templateVariables) ?? []) + (job.map(audienceWarnings) ?? [])
    }

    // MARK: - Unknown fields

    /// Members of `document` that the job's field tables (`JobFields.swift`) do not list, each
    /// with the field probably meant. The same unknown member in several elements of an array
    /// (every recipient) is one warning with a count.
    public static func unknownFields(in document: JSONValue) -> [JobWarning] {
        var found: [String: Int] = [:]  // pattern → index in warnings
        var warnings: [JobWarning] = []
        walk(document, JobField.schema, path: "$", pattern: "$") { path, pattern, name, schema in
            if let index = found[pattern] {
                warnings[index].moreCount += 1
                return
            }
            let suggestion = suggestion(for: name, in: schema)
            let message = suggestion.map { "unknown field (did you mean \($0)?)" } ?? "unknown field"
            found[pattern] = warnings.count
            warnings.append(JobWarning(kind: .unknownField, path: path, message: message, suggestion: suggestion, pattern: pattern))
        }
        return warnings
    }

    private static func walk(_ value: JSONValue, _ schema: JobObjectSchema, path: String, pattern: String,
                             _ unknown: (_ path: String, _ pattern: String, _ name: String, _ schema: JobObjectSchema) -> Void) {
        guard case .object(let object) = value else { return }
        for member in object.members {
            let memberPath = JobPath.member(path, member.key)
            let memberPattern = JobPath.member(pattern, member.key)
            guard let shape = schema.shape(of: member.key) else {
                unknown(memberPath, memberPattern, member.key, schema)
                continue
            }
            switch shape {
            case .value, .freeform: break
            case .object(let child):
                walk(member.value, child, path: memberPath, pattern: memberPattern, unknown)
            case .objects(let child):
                guard case .array(let elements) = member.value else { break }
                for (index, element) in elements.enumerated() {
                    walk(element, child, path: JobPath.element(memberPath, index), pattern: memberPattern + "[*]", unknown)
                }
            case .map(let child):
                guard case .object(let entries) = member.value else { break }
                for entry in entries.members {
                    walk(entry.value, child, path: JobPath.member(memberPath, entry.key),
                         pattern: JobPath.member(memberPattern, entry.key), unknown)
                }
            }
        }
    }

    /// The field probably meant by `name` in an object of `schema`, first match wins: the same
    /// name but for case, `_` and `-` (`image_url` → `imageURL`); a known mistake (`message` →
    /// `body`, the tables' aliases); a field of a nested object (`title` at the job's root →
    /// `content.languages.<tag>.title`); a near spelling (`tittle` → `title`); a near spelling
    /// of a known mistake (`tll` → `ttlSeconds`).
    public static func suggestion(for name: String, in schema: JobObjectSchema) -> String? {
        let wanted = normalized(name)
        guard !wanted.isEmpty else { return nil }
        if let field = schema.fields.first(where: { normalized($0.name) == wanted }) { return field.name }
        if let alias = schema.aliases.first(where: { normalized($0.key) == wanted }) { return alias.value }
        if let nested = nestedField(wanted, in: schema, depth: 3) { return nested }
        // Near spellings of a field, then (closer still) of a known mistake (`tll` → ttlSeconds).
        let limit = Suggestion.threshold(for: wanted)
        var best: (name: String, distance: Int)?
        for field in schema.fields {
            let distance = editDistance(wanted, normalized(field.name))
            if distance <= limit, distance < (best?.distance ?? Int.max) { best = (field.name, distance) }
        }
        if best == nil {
            for (spelling, field) in schema.aliases.sorted(by: { $0.key < $1.key }) where editDistance(wanted, normalized(spelling)) <= 1 {
                best = (field, 1)
                break
            }
        }
        return best?.name
    }

    /// The shortest relative path to a field spelled `wanted` (normalized) in an object nested
    /// in `schema`, at most `depth` objects down.
    private static func nestedField(_ wanted: String, in schema: JobObjectSchema, depth: Int) -> String? {
        var level: [(prefix: String, schema: JobObjectSchema)] = [("", schema)]
        for _ in 0..<depth {
            var next: [(prefix: String, schema: JobObjectSchema)] = []
            for (prefix, current) in level {
                for field in current.fields {
                    let child: JobObjectSchema
                    let step: String
                    switch field.shape {
                    case .object(let nested): child = nested; step = field.name
                    case .objects(let nested): child = nested; step = field.name + "[i]"
                    case .map(let nested): child = nested; step = field.name + ".<tag>"
                    case .value, .freeform: continue
                    }
                    let path = prefix.isEmpty ? step : prefix + "." + step
                    if let hit = child.fields.first(where: { normalized($0.name) == wanted }) { return path + "." + hit.name }
                    next.append((path, child))
                }
            }
            level = next
        }
        return nil
    }

    /// Lower case, without `_`, `-` and spaces.
    static func normalized(_ name: String) -> String {
        String(name.lowercased().unicodeScalars.filter { $0 != "_" && $0 != "-" && $0 != " " })
    }

    /// Optimal string alignment distance (Levenshtein plus adjacent transpositions), by
    /// character: ``Suggestion/distance(_:_:)``, the one the command line's "did you mean" uses.
    static func editDistance(_ a: String, _ b: String) -> Int { Suggestion.distance(a, b) }

    // MARK: - Template variables

    /// Template variables with no value (absent or empty in the recipient's `properties`) and
    /// no `default:` for at least one recipient, one warning per variable per job (docs/reference/job.md:
    /// they render empty). Follows the worker's choices: the recipient's language, then the
    /// default language's field when the chosen language lacks it.
    public static func templateVariables(in job: FanOutJob) -> [JobWarning] {
        let languages = job.content.languages
        guard !languages.isEmpty, !job.recipients.isEmpty else { return [] }
        let selector = LanguageSelector(languages: languages.map(\.language), defaultLanguage: job.content.defaultLanguage)
        let fallback = languages.indices.contains(selector.defaultIndex) ? languages[selector.defaultIndex] : languages[0]
        // Per language: the templates it renders, with the path each comes from, parsed once.
        let templates: [[(path: String, variables: [String])]] = languages.map { language in
            var list: [(path: String, variables: [String])] = []
            func add(_ own: String?, _ inherited: String?, _ field: LanguageField) {
                let owner = own != nil ? language.language : fallback.language
                guard let text = own ?? inherited else { return }
                let variables = Template(text).variablesWithoutDefault
                if !variables.isEmpty { list.append((languagePath(owner, field.rawValue), variables)) }
            }
            add(language.title, fallback.title, .title)
            add(language.subtitle, fallback.subtitle, .subtitle)
            add(language.body, fallback.body, .body)
            let owner = language.actions != nil ? language.language : fallback.language
            for (index, action) in (language.actions ?? fallback.actions ?? []).enumerated() {
                let variables = Template(action.title).variablesWithoutDefault
                if !variables.isEmpty {
                    list.append((languagePath(owner, LanguageField.actions.rawValue) + "[\(index)].title", variables))
                }
            }
            return list
        }
        guard templates.contains(where: { !$0.isEmpty }) else { return [] }
        struct Missing { var paths: [String]; var firstRecipient: Int; var recipients: Int }
        var missing: [String: Missing] = [:]
        var order: [String] = []
        for (position, recipient) in job.recipients.enumerated() {
            var seenHere: Set<String> = []
            for (path, variables) in templates[selector.index(for: recipient.language)] {
                for name in variables where (recipient.properties[name] ?? "").isEmpty {
                    if missing[name] == nil {
                        missing[name] = Missing(paths: [], firstRecipient: position, recipients: 0)
                        order.append(name)
                    }
                    if !(missing[name]?.paths.contains(path) ?? true) { missing[name]?.paths.append(path) }
                    if seenHere.insert(name).inserted { missing[name]?.recipients += 1 }
                }
            }
        }
        return order.compactMap { name in
            guard let entry = missing[name], let path = entry.paths.first else { return nil }
            let also = entry.paths.count > 1 ? " (also in \(entry.paths.dropFirst().joined(separator: ", ")))" : ""
            let message = "template variable \(name) has no value and no default for \(entry.recipients) of \(job.recipients.count) "
                + "recipient\(job.recipients.count == 1 ? "" : "s") (first: $.recipients[\(entry.firstRecipient)]): it renders empty\(also)"
            return JobWarning(kind: .templateVariable, path: path, message: message)
        }
    }

    private static func languagePath(_ tag: String, _ field: String) -> String {
        JobPath.member(JobPath.member("$.content.languages", tag), field)
    }
}

extension Template {
    /// Names of the placeholders without a `default:`, in order, each once.
    public var variablesWithoutDefault: [String] {
        var names: [String] = []
        for segment in segments {
            if case .variable(let name, nil) = segment, !names.contains(name) { names.append(name) }
        }
        return names
    }
}
