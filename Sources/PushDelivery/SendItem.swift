import PushCore

/// One recipient ready to send (its plan stays with the worker's job run). A class, immutable:
/// send items are grouped and submitted by reference, not copied field by field.
public final class SendItem: Sendable {
    public let index: Int
    public let request: ProviderRequest

    public init(index: Int, request: ProviderRequest) {
        self.index = index
        self.request = request
    }
}
