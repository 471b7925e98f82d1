extension MsgIDFields {
    /// The fields of the msgId a payload carries when several recipients share it (a Huawei batch:
    /// one request, one payload, up to 1000 tokens; docs/providers.md): the app, campaign, variant and
    /// platform, with no user and an empty subscription. A tracking event from such a payload
    /// counts for its campaign and variant, not for one user; every recipient's result and
    /// de-duplication key keep the recipient's own msgId.
    public static func batch(appID: String, campaignID: String, platform: String, variant: String?) -> MsgIDFields {
        MsgIDFields(appID: appID, campaignID: campaignID, userID: nil, subscriptionID: "", platform: platform, variant: variant)
    }

    /// Whether these are the fields of a shared payload's msgId (``batch(appID:campaignID:platform:variant:)``).
    public var isBatch: Bool { userID == nil && subscriptionID.isEmpty }
}
