/// `audience` (docs/reference/job.md): an FCM topic or condition instead of `recipients`. Every problem is
/// a whole-job problem (the job has nobody else to send to), reported with the others.
extension JobDecoder {
    /// Whether the job names an audience (present and not `null`), even an invalid one: it then
    /// has no `recipients` to require.
    static func hasAudience(_ root: JobMembers<JobField>) -> Bool {
        root.value(.audience) != nil
    }

    /// The audience, validated: exactly one of `topic` (`[a-zA-Z0-9-_.~%]{1,900}`, a leading
    /// `/topics/` dropped) and `condition` (``FCMCondition``: quoted topics, `in topics`, `&&`,
    /// `||`, `!`, parentheses, at most five topics).
    static func decodeAudience(_ root: JobMembers<JobField>) -> FCMAudience? {
        guard let section = root.object(.audience, AudienceField.self) else { return nil }
        let topic = section.string(.topic)
        let condition = section.string(.condition)
        switch (topic, condition) {
        case (nil, nil):
            // A wrong type was reported by the accessor; only an empty object is left to explain.
            if section.value(.topic) == nil && section.value(.condition) == nil {
                root.report(.audience, "needs a topic or a condition")
            }
            return nil
        case (.some, .some):
            root.report(.audience, "has both topic and condition: give one")
            return nil
        case (let name?, nil):
            let bare = FCMTopicName.withoutPrefix(name)
            if let problem = FCMTopicName.problem(bare) {
                section.report(.topic, problem)
                return nil
            }
            return .topic(bare)
        case (nil, let expression?):
            switch FCMCondition.topics(in: expression) {
            case .success: return .condition(expression)
            case .failure(let error):
                section.report(.condition, error.reason)
                return nil
            }
        }
    }
}
