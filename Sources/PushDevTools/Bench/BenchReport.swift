import Foundation
import PushWorker
import PushEvents
import PushCore
import PushKafkaMock
import PushSandbox

/// Writes the bench report (JSON) and its throughput chart (SVG, drawn by hand).
package enum BenchReport {
    package static func writeJSON(_ report: [String: Any], to path: String) throws {
        let data = try JSONSerialization.data(withJSONObject: report, options: [.prettyPrinted, .sortedKeys])
        try (data + Data("\n".utf8)).write(to: URL(fileURLWithPath: path))
    }

    /// Results per bucket as bars, with a time axis in seconds and a rate axis in results/s.
    package static func svg(buckets: [Int], bucketMs: Int, title: String) -> String {
        let width = 900.0, height = 360.0, left = 70.0, right = 20.0, top = 40.0, bottom = 50.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let perSecond = buckets.map { Double($0) * 1000 / Double(bucketMs) }
        let peak = max(1, perSecond.max() ?? 1)
        let scaleMax = niceCeiling(peak)
        let barWidth = plotWidth / Double(max(1, buckets.count))
        func fmt(_ value: Double) -> String { String(format: "%.1f", value) }
        var out = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="\(fmt(left))" y="22" font-size="14" font-weight="bold">\(escape(title))</text>

        """
        for step in 0...4 {
            let value = scaleMax * Double(step) / 4
            let y = top + plotHeight - plotHeight * Double(step) / 4
            out += "<line x1=\"\(fmt(left))\" y1=\"\(fmt(y))\" x2=\"\(fmt(left + plotWidth))\" y2=\"\(fmt(y))\" stroke=\"#ddd\"/>\n"
            out += "<text x=\"\(fmt(left - 6))\" y=\"\(fmt(y + 4))\" text-anchor=\"end\">\(Int(value))</text>\n"
        }
        for (index, rate) in perSecond.enumerated() where rate > 0 {
            let barHeight = plotHeight * rate / scaleMax
            out += "<rect x=\"\(fmt(left + Double(index) * barWidth))\" y=\"\(fmt(top + plotHeight - barHeight))\" width=\"\(fmt(max(0.5, barWidth * 0.9)))\" height=\"\(fmt(barHeight))\" fill=\"#2f6fb3\"/>\n"
        }
        let seconds = Double(buckets.count * bucketMs) / 1000
        let tickStep = niceCeiling(max(0.1, seconds / 8))
        var tick = 0.0
        while tick <= seconds + 1e-9 {
            let x = left + plotWidth * tick / max(seconds, 0.001)
            out += "<line x1=\"\(fmt(x))\" y1=\"\(fmt(top + plotHeight))\" x2=\"\(fmt(x))\" y2=\"\(fmt(top + plotHeight + 5))\" stroke=\"#333\"/>\n"
            out += "<text x=\"\(fmt(x))\" y=\"\(fmt(top + plotHeight + 18))\" text-anchor=\"middle\">\(tick.truncatingRemainder(dividingBy: 1) == 0 ? String(Int(tick)) : String(format: "%.1f", tick))</text>\n"
            tick += tickStep
        }
        out += """
        <line x1="\(fmt(left))" y1="\(fmt(top + plotHeight))" x2="\(fmt(left + plotWidth))" y2="\(fmt(top + plotHeight))" stroke="#333"/>
        <line x1="\(fmt(left))" y1="\(fmt(top))" x2="\(fmt(left))" y2="\(fmt(top + plotHeight))" stroke="#333"/>
        <text x="\(fmt(left + plotWidth / 2))" y="\(fmt(height - 10))" text-anchor="middle">seconds since the first enqueue (bars: \(bucketMs) ms buckets)</text>
        <text transform="translate(16 \(fmt(top + plotHeight / 2))) rotate(-90)" text-anchor="middle">results / s</text>
        </svg>

        """
        return out
    }

    /// 1, 2, 2.5 or 5 × 10^k at or above `value`.
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 0 else { return 1 }
        let magnitude = pow(10, floor(log10(value)))
        for factor in [1.0, 2.0, 2.5, 5.0, 10.0] where factor * magnitude >= value { return factor * magnitude }
        return 10 * magnitude
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
