import Foundation
import PushEncoding

/// Realistic jobs for `make demo`, `render` examples and tests.
public enum SampleJobs {
    /// The docs/reference/job.md example with real-looking tokens: an iOS recipient in Turkish with a
    /// template property, an Android recipient asking for `pt-BR` (falls back to `en`), and a
    /// Chrome Web Push recipient in Korean (falls back to `en`) whose keys are the RFC 8291 §5
    /// example's (a valid P-256 point, so encryption works). `expiresAt` is
    /// 2026-11-30T14:00:00Z as in docs/reference/job.md; use ``designExample(expiresAt:)`` for a live one.
    public static let designExample: String = """
    {
      "schemaVersion": 1, "jobId": "cmp_42:0007", "appId": "app_demo",
      "campaignId": "cmp_42", "variant": "A",
      "createdAt": "2026-11-30T10:00:00Z", "expiresAt": "2026-11-30T14:00:00Z",
      "priority": "high", "ttlSeconds": 86400, "collapseId": "sale", "throttlePerMinute": 60000,
      "content": {
        "defaultLanguage": "en",
        "languages": {
          "en": {"title": "Hi {{ first_name | default: \\"there\\" }}", "subtitle": "Today only",
                 "body": "20% off everything", "url": "https://shop.example/sale",
                 "imageURL": "https://cdn.example/sale.jpg",
                 "actions": [{"id": "buy", "title": "Buy", "url": "https://shop.example/cart"},
                             {"id": "later", "title": "Later"}]},
          "tr": {"title": "Merhaba {{ first_name }}", "body": "Her şeyde %20 indirim"}
        }
      },
      "data": {"screen": "sale", "promo": "SPRING20"},
      "ios": {"sound": "default", "badge": {"mode": "increase", "value": 1}, "threadId": "sale",
              "category": null, "interruptionLevel": "time-sensitive", "relevanceScore": 0.8,
              "contentAvailable": false, "mutableContent": true,
              "locKey": null, "locArgs": [], "titleLocKey": null, "titleLocArgs": []},
      "android": {"channelId": "promo", "priority": 1, "smallIcon": "ic_stat", "largeIcon": "https://cdn.example/logo-192.png",
                  "accentColor": "FF2196F3", "ledColor": "FF00FF00", "visibility": 1,
                  "groupKey": "sale", "groupMessage": "New offers", "sound": "chime"},
      "web": {"iconURL": "https://cdn.example/icon-192.png", "badgeURL": "https://cdn.example/badge-72.png",
              "requireInteraction": false, "urgency": "normal", "topic": "sale"},
      "recipients": [
        {"userId": "u1", "subscriptionId": "s1", "platform": "ios",
         "token": "5f2b8c4e1a9d7e3f6b0c2a4d8e1f3b5c7a9e0d2f4b6c8a1e3d5f7b9c0a2e4d6f",
         "language": "tr", "properties": {"first_name": "Ayşe"}},
        {"userId": "u2", "subscriptionId": "s2", "platform": "android",
         "token": "fG7kQ2xRtY0:APA91bHq3Zr8LmN5vW2yXcT6sJ1pO4uK9dE7fG0hI3jA5bC8nM2lQ6wR1tY4uP7oS0xV3zD9eF2gH5iJ8kL1mN4bV7cX0zA3sD6fG9hJ2kL5",
         "language": "pt-BR"},
        {"userId": "u3", "subscriptionId": "s3", "platform": "web", "language": "ko",
         "browser": "chrome",
         "subscription": {"endpoint": "https://fcm.googleapis.com/fcm/send/dX3kP9qR2sT:APA91bF7hJ2kL5mN8pQ1rS4tU7vW0xY3zA6bC9dE2fG5hI8jK1lM4nO7pQ0rS3tU6vW9",
                          "keys": {"p256dh": "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
                                   "auth": "BTBZMqHH6r4Tts7J_aSIgg"}}}
      ]
    }
    """

    /// ``designExample`` with `expiresAt` replaced (RFC 3339 UTC), e.g. now + 4 h for a demo.
    public static func designExample(expiresAt: Date) -> String {
        designExample.replacingOccurrences(of: "\"expiresAt\": \"2026-11-30T14:00:00Z\"",
                                           with: "\"expiresAt\": \"\(RFC3339Timestamp.format(expiresAt))\"")
    }
}
