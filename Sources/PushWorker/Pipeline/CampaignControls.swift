import PushCore
import PushRedis
import PushRuntime
import Synchronization

/// One campaign's control as this worker knows it (docs/campaigns.md), shared by the campaign's
/// processings: the claim stage reads it before each claim, the write check right before each
/// request is written.
final class CampaignCell: Sendable {
    let appID: String
    let campaignID: String
    /// ``CampaignState`` as 0 active, 1 paused, 2 cancelled: read on the transport's thread.
    private let stateCode = Atomic<UInt8>(0)
    private let known = Atomic<Bool>(false)
    private let detail = Mutex<CampaignControl>(.none)
    /// When the control was last read from Redis (monotonic seconds; -∞ before the first read).
    private let readAt = Mutex<Double>(-.infinity)

    init(appID: String, campaignID: String) {
        self.appID = appID
        self.campaignID = campaignID
    }

    var state: CampaignState {
        switch stateCode.load(ordering: .relaxed) {
        case 1: .paused
        case 2: .cancelled
        default: .active
        }
    }

    /// False until the control was read from Redis once.
    var isKnown: Bool { known.load(ordering: .relaxed) }

    /// Whether the control was read from Redis within `seconds` before `now` (monotonic).
    func isFresh(now: Double, within seconds: Double) -> Bool { now - readAt.withLock { $0 } <= seconds }

    /// Whether a claimed request may still be written: the campaign neither paused nor cancelled.
    var allowsSending: Bool { stateCode.load(ordering: .relaxed) == 0 }

    var control: CampaignControl { detail.withLock { $0 } }

    /// The control as read from Redis at `at` (monotonic seconds; nil: learned otherwise, the
    /// time of the last read is kept).
    func update(_ control: CampaignControl, readAt at: Double? = nil) {
        detail.withLock { $0 = control }
        if let at { readAt.withLock { $0 = max($0, at) } }
        let code: UInt8 = switch control.state {
        case .active: 0
        case .paused: 1
        case .cancelled: 2
        }
        stateCode.store(code, ordering: .relaxed)
        known.store(true, ordering: .relaxed)
    }

    /// A state learned without the rest of the control (the guardrail's answer to a count).
    func update(state: CampaignState) {
        var control = self.control
        control.state = state
        update(control)
    }
}

/// The campaign controls of the campaigns this worker has work for: one ``CampaignCell`` per
/// campaign, read from Redis when a campaign is first seen, with every claim round trip, and
/// every ``refreshSeconds`` while the campaign has work here (one round trip for all of them),
/// so a pause or cancel reaches requests claimed but not yet written within that time.
final class CampaignControls: Sendable {
    private struct Key: Hashable {
        var appID: String
        var campaignID: String
    }

    let state: any DeliveryStatePort
    let metrics: Metrics
    let logger: Logger
    /// How often the controls of campaigns with work here are read again.
    let refreshSeconds: Double
    private let cells = Mutex<[Key: CampaignCell]>([:])

    init(state: any DeliveryStatePort, metrics: Metrics, logger: Logger, refreshSeconds: Double = 1) {
        self.state = state; self.metrics = metrics; self.logger = logger; self.refreshSeconds = refreshSeconds
        publishCounts()
    }

    /// Campaigns with work here whose control is known to be in `state`.
    func count(_ state: CampaignState) -> Int {
        cells.withLock { $0.values.count { $0.isKnown && $0.state == state } }
    }

    /// The cell of a campaign (made when first asked for).
    func cell(appID: String, campaignID: String) -> CampaignCell {
        let key = Key(appID: appID, campaignID: campaignID)
        return cells.withLock { cells in
            if let cell = cells[key] { return cell }
            let cell = CampaignCell(appID: appID, campaignID: campaignID)
            cells[key] = cell
            return cell
        }
    }

    /// Reads the controls of `cells` (one round trip) and updates them, read at `now`
    /// (monotonic); false when Redis did not answer.
    @discardableResult
    func read(_ cells: [CampaignCell], now: Double) -> Bool {
        guard !cells.isEmpty else { return true }
        do {
            let controls = try state.controls(cells.map { ($0.appID, $0.campaignID) })
            for (cell, control) in zip(cells, controls) { apply(control, to: cell, readAt: now) }
            return true
        } catch {
            logger.warning("campaign controls not read", ["error": "\(error)"])
            return false
        }
    }

    /// Updates a cell with a control read at `readAt`, logging a change of state.
    func apply(_ control: CampaignControl, to cell: CampaignCell, readAt: Double) {
        let before = cell.isKnown ? cell.state : nil
        cell.update(control, readAt: readAt)
        if let before, before != control.state {
            logger.info("campaign control changed", ["app.id": cell.appID, "campaign.id": cell.campaignID, "state": control.state.rawValue,
                                                     "reason": control.reason ?? ""])
        }
    }

    /// Reads again the controls of the campaigns that have work here (`active`: their cells) and
    /// forgets the cells of campaigns that have none.
    func refresh(active: [CampaignCell], now: Double) {
        var seen = Set<ObjectIdentifier>()
        let unique = active.filter { seen.insert(ObjectIdentifier($0)).inserted }
        cells.withLock { cells in cells = cells.filter { seen.contains(ObjectIdentifier($0.value)) } }
        read(unique, now: now)
        publishCounts()
    }

    /// `pushworker_campaign_controls{state}`: the campaigns with work here, by state.
    func publishCounts() {
        for campaignState in CampaignState.allCases {
            metrics.set("pushworker_campaign_controls", [("state", campaignState.rawValue)], Double(count(campaignState)))
        }
    }
}
