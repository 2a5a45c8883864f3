import Testing

@testable import StallViews

@Suite("stallagent top's screen")
struct TopScreenTests {
    let rows = [
        TopScreen.Row(
            pid: 4_194_304, name: "a-very-long-process-name\u{1b}[2J", state: "hang 12.3s", stalled: true, turnsPerSecond: 12_345.6,
            busyPercent: 100, longestRecent: 0.0123, longestEver: 754.2, stalls: 123_456),
        TopScreen.Row(
            pid: 7, name: "nginx", state: "supervisor", stalled: false, turnsPerSecond: nil, busyPercent: 0, longestRecent: 0,
            longestEver: 0, stalls: 0),
    ]

    @Test func everyLineFitsEightyColumnsAndTheColumnsLineUp() {
        let lines = TopScreen.lines(rows, title: "stallagent top · 2 processes · 5 s")
        #expect(lines.count == 2 + rows.count + 1)
        #expect(lines.allSatisfy { $0.count <= 80 })
        // Each value ends where its header does.
        let header = lines[1]
        for column in ["PID", "TURNS/S", "BUSY%", "STALLS"] {
            let end = header.range(of: column)!.upperBound.utf16Offset(in: header)
            for line in lines[2...3] {
                let index = line.index(line.startIndex, offsetBy: end - 1)
                #expect(line[index] != " ", "\(column) in \(line)")
            }
        }
        #expect(lines[2].hasPrefix("4194304 a-very-long-pro… hang 12.3s    12345.6 100.0     12ms (754.20s) 123456"))
        #expect(lines[3].contains(" nginx ") && lines[3].contains("      -"))
    }

    @Test func targetNamesCannotDriveTheTerminal() {
        let lines = TopScreen.lines(rows, title: "t", width: 200)
        #expect(!lines.joined().contains("\u{1b}"))
        #expect(lines[2].contains("a-very-long-pro…"))
    }
}
