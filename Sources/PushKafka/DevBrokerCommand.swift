/// `pushworker dev-broker`: librdkafka's mock cluster as a process (development only, DESIGN §13).
public enum DevBrokerCommand {
    /// Runs the subcommand with `arguments` (after `dev-broker`); returns the exit status.
    public static func main(_ arguments: [String]) -> Int32 {
        print("pushworker dev-broker: not built yet")
        return 70
    }
}
