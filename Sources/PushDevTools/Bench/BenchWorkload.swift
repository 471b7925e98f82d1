import Foundation
import PushCore
import PushKafkaMock
import PushSandbox
import PushWorker
import PushEvents
import PushEncoding

/// The synthetic campaign of `pushworker-dev bench e2e`: jobs of `jobSize` recipients, a platform mix,
/// several languages with realistic text lengths, a share of dead tokens the sandbox answers as
/// unregistered (tokens/ids starting `dead`). Deterministic for a seed.
package struct BenchWorkload {
    package struct Mix: Sendable {
        var ios = 50
        var android = 35
        var web = 15
        var total: Int { ios + android + web }

        /// `ios:50,android:35,web:15` (weights, any scale).
        package init(parsing text: String) throws(PushCore.UsageError) {
            ios = 0; android = 0; web = 0
            for part in text.split(separator: ",") {
                let pair = part.split(separator: ":")
                guard pair.count == 2, let weight = Int(pair[1]), weight >= 0 else { throw PushCore.UsageError("--mix expects ios:W,android:W,web:W, got \(text)") }
                switch pair[0] {
                case "ios": ios = weight
                case "android": android = weight
                case "web": web = weight
                default: throw PushCore.UsageError("--mix: unknown platform \(pair[0])")
                }
            }
            guard total > 0 else { throw PushCore.UsageError("--mix: the weights add up to 0") }
        }
        init() {}
        var description: String { "ios:\(ios),android:\(android),web:\(web)" }
    }

    struct Job {
        var id: String
        var json: [UInt8]
        var recipients: Int
    }

    var appID: String
    var runID: String
    var notifications: Int
    var jobSize: Int
    var mix: Mix
    var deadShare: Double
    /// Web Push subscriptions (JSON objects) the sandbox can decrypt for; `deadWeb` answer 410.
    var liveWeb: [String]
    var deadWeb: [String]
    /// Recipients with only `subscriptionId`, `platform` and `token`/`subscription`: the most
    /// recipients a job's bytes can hold.
    var lean = false

    static let languages = ["en", "en-GB", "tr", "pt-BR", "ko", "de", "ja", "es", "fr-CA", "tr"]
    static let names = ["Ayşe", "Sam", "João", "민준", "Lena", "Yuki", "Lucía", "Chloé", "Mehmet", "Olivia"]

    var jobCount: Int { (notifications + jobSize - 1) / jobSize }

    /// How many Web Push recipients the workload will have at most (to size the subscription pools).
    static func webCount(notifications: Int, mix: Mix) -> Int { (notifications * mix.web + mix.total - 1) / mix.total }

    /// Job number `index` (0-based).
    func job(_ index: Int) -> Job {
        let first = index * jobSize
        let count = min(jobSize, notifications - first)
        let jobID = "bench_\(runID):\(String(index, radix: 10))"
        var random = SplitMix64(seed: UInt64(index) &* 0x9E37_79B9 &+ 17)
        var recipients: [String] = []
        recipients.reserveCapacity(count)
        for offset in 0..<count {
            let number = first + offset
            let pick = Int(random.next() % UInt64(mix.total))
            let dead = Double(random.next() % 10_000) / 10_000 < deadShare
            let language = Self.languages[Int(random.next() % UInt64(Self.languages.count))]
            let name = Self.names[number % Self.names.count]
            if lean {
                recipients.append(Self.leanRecipient(number: number, runID: runID, pick: pick, mix: mix, dead: dead, random: &random,
                                                     web: dead && !deadWeb.isEmpty ? deadWeb : liveWeb))
                continue
            }
            let properties = number % 4 == 3 ? "" : #","properties":{"first_name":"\#(name)","tier":"gold"}"#
            let head = #"{"userId":"u\#(number)","subscriptionId":"s\#(runID)-\#(number)","#
            if pick < mix.ios {
                recipients.append(head + #""platform":"ios","token":"\#(Self.hexToken(&random, dead: dead))","language":"\#(language)"\#(properties)}"#)
            } else if pick < mix.ios + mix.android {
                recipients.append(head + #""platform":"android","token":"\#(Self.fcmToken(&random, dead: dead))","language":"\#(language)"\#(properties)}"#)
            } else {
                let pool = dead && !deadWeb.isEmpty ? deadWeb : liveWeb
                let subscription = pool.isEmpty ? "{}" : pool[number % pool.count]
                let browser = number % 5 == 1 ? #","browser":"firefox""# : ""
                recipients.append(head + #""platform":"web","language":"\#(language)"\#(browser),"subscription":\#(subscription)\#(properties)}"#)
            }
        }
        let now = Date()
        let json = """
        {"schemaVersion":1,"jobId":"\(jobID)","appId":"\(appID)","campaignId":"cmp_bench_\(runID)","variant":"\(index % 2 == 0 ? "A" : "B")",\
        "createdAt":"\(RFC3339Timestamp.format(now))","expiresAt":"\(RFC3339Timestamp.format(now.addingTimeInterval(4 * 3600)))",\
        "priority":"high","ttlSeconds":86400,"collapseId":"winter-sale","throttlePerMinute":6000000,\
        "content":{"defaultLanguage":"en","languages":{\
        "en":{"title":"Hi {{ first_name | default: \\"there\\" }}, your winter sale is here","subtitle":"48 hours only",\
        "body":"Take 20% off everything in store and online, plus free shipping on orders over $50. Your {{ tier | default: \\"member\\" }} discount is applied at checkout.",\
        "url":"https://shop.example/sale?utm_source=push&utm_campaign=winter","imageURL":"https://cdn.shop.example/campaigns/winter/hero-1200x600.jpg",\
        "actions":[{"id":"buy","title":"Shop now","url":"https://shop.example/cart"},{"id":"later","title":"Remind me later"}]},\
        "tr":{"title":"Merhaba {{ first_name }}, kış indirimi başladı","body":"Mağazada ve internette her şeyde %20 indirim, 50 TL üzeri siparişlerde ücretsiz kargo. Sadece 48 saat!",\
        "actions":[{"id":"buy","title":"Alışverişe başla"},{"id":"later","title":"Sonra hatırlat"}]},\
        "pt":{"title":"Olá {{ first_name | default: \\"você\\" }}, a liquidação de inverno chegou","body":"20% de desconto em tudo, na loja e online, e frete grátis acima de R$ 250. Só por 48 horas."},\
        "ko":{"title":"{{ first_name }}님, 겨울 세일이 시작되었습니다","body":"매장과 온라인 모든 상품 20% 할인, 5만원 이상 무료 배송. 48시간 한정 🎉"},\
        "de":{"title":"Hallo {{ first_name }}, der Winterschlussverkauf ist da","body":"20 % Rabatt auf alles im Laden und online, dazu kostenloser Versand ab 50 €. Nur 48 Stunden!"},\
        "ja":{"title":"{{ first_name }}さん、ウィンターセール開催中","body":"店舗とオンラインの全商品が20%オフ。5,000円以上のご注文で送料無料。48時間限定です。"}}},\
        "data":{"screen":"sale","promo":"WINTER20","campaign_ref":"2026-winter-\(index % 7)"},\
        "ios":{"sound":"default","badge":{"mode":"increase","value":1},"threadId":"sale","interruptionLevel":"time-sensitive","relevanceScore":0.8,"mutableContent":true},\
        "android":{"channelId":"promo","smallIcon":"ic_stat","largeIcon":"https://cdn.shop.example/icon-192.png","accentColor":"FF2196F3","groupKey":"sale"},\
        "web":{"iconURL":"https://cdn.shop.example/icon-192.png","badgeURL":"https://cdn.shop.example/badge-72.png","urgency":"normal","topic":"winter-sale"},\
        "recipients":[\(recipients.joined(separator: ","))]}
        """
        return Job(id: jobID, json: Array(json.utf8), recipients: count)
    }

    static let hexDigits: [UInt8] = [UInt8]("0123456789abcdef".utf8)
    static let fcmAlphabet: [UInt8] = [UInt8]("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-".utf8)

    static func leanRecipient(number: Int, runID: String, pick: Int, mix: Mix, dead: Bool, random: inout SplitMix64, web: [String]) -> String {
        let head = #"{"subscriptionId":"s\#(runID)-\#(number)","#
        if pick < mix.ios { return head + #""platform":"ios","token":"\#(hexToken(&random, dead: dead))"}"# }
        if pick < mix.ios + mix.android { return head + #""platform":"android","token":"\#(fcmToken(&random, dead: dead))"}"# }
        return head + #""platform":"web","subscription":\#(web.isEmpty ? "{}" : web[number % web.count])}"#
    }

    static func hexToken(_ random: inout SplitMix64, dead: Bool) -> String {
        randomToken(&random, prefix: dead ? "dead" : "", alphabet: hexDigits, length: 64)
    }

    static func fcmToken(_ random: inout SplitMix64, dead: Bool) -> String {
        randomToken(&random, prefix: dead ? "deadXq:APA91b" : "fXq:APA91b", alphabet: fcmAlphabet, length: 152)
    }

    /// `prefix`, then characters of `alphabet` (a power-of-two count) drawn from `random` up to
    /// `length`: as many per 64-bit draw as fit, lowest bits first.
    static func randomToken(_ random: inout SplitMix64, prefix: String, alphabet: [UInt8], length: Int) -> String {
        let bits = alphabet.count.trailingZeroBitCount
        let mask = UInt64(alphabet.count - 1)
        var bytes = Array(prefix.utf8)
        while bytes.count < length {
            var value = random.next()
            for _ in 0..<(64 / bits) where bytes.count < length {
                bytes.append(alphabet[Int(value & mask)])
                value >>= UInt64(bits)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
