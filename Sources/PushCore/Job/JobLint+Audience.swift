/// Remarks about audience jobs (docs/reference/job.md), for the CLI: a topic or condition send is rendered
/// once, in `defaultLanguage`, with no recipient properties.
extension JobLint {
    /// For an audience job: its other languages (never chosen), and the template variables of
    /// the default language without a `default:` (they render empty). Nothing for other jobs.
    public static func audienceWarnings(in job: FanOutJob) -> [JobWarning] {
        guard let audience = job.audience else { return [] }
        let languages = job.content.languages
        guard !languages.isEmpty else { return [] }
        let selector = LanguageSelector(languages: languages.map(\.language), defaultLanguage: job.content.defaultLanguage)
        let chosen = languages.indices.contains(selector.defaultIndex) ? languages[selector.defaultIndex] : languages[0]
        var warnings: [JobWarning] = []
        let unused = languages.filter { $0.language != chosen.language }
        if let first = unused.first {
            let message = "not used: an audience (\(audience.kind)) job is rendered once, in defaultLanguage \(chosen.language)"
            warnings.append(JobWarning(kind: .unusedByAudience, path: JobPath.member("$.content.languages", first.language),
                                       message: message, moreCount: unused.count - 1,
                                       pattern: unused.count > 1 ? "$.content.languages.<other tags>" : nil))
        }
        var fields: [(field: String, text: String)] = []
        if let title = chosen.title { fields.append((LanguageField.title.rawValue, title)) }
        if let subtitle = chosen.subtitle { fields.append((LanguageField.subtitle.rawValue, subtitle)) }
        if let body = chosen.body { fields.append((LanguageField.body.rawValue, body)) }
        for (index, action) in (chosen.actions ?? []).enumerated() {
            fields.append((LanguageField.actions.rawValue + "[\(index)].title", action.title))
        }
        let languagePath = JobPath.member("$.content.languages", chosen.language)
        var seen: Set<String> = []
        for (field, text) in fields {
            for name in Template(text).variablesWithoutDefault where seen.insert(name).inserted {
                warnings.append(JobWarning(kind: .templateVariable, path: languagePath + "." + field,
                                           message: "template variable \(name) has no default: an audience job has no recipient properties, it renders empty"))
            }
        }
        return warnings
    }
}
