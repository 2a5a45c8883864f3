import Foundation

@testable import StallCapture
@testable import StallSymbols

/// elfutils' `eu-stack`, the reference our stacks are compared with. It stops the target
/// (ptrace) and has every register, so its frames are the truth for code with CFI or frame
/// pointers.
enum EuStack {
    static var url: URL? {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/eu-stack") ? URL(fileURLWithPath: "/usr/bin/eu-stack") : nil
    }

    /// The frame addresses eu-stack prints for thread `tid` of `pid`, innermost first (pc for
    /// frame 0, return addresses after it: what our frames carry too).
    static func addresses(pid: Int32, tid: Int32) throws -> [UInt64] {
        try frames(pid: pid, tid: tid).map(\.address)
    }

    /// Addresses with the name eu-stack gives each frame (nil when it leaves one unnamed).
    static func frames(pid: Int32, tid: Int32) throws -> [(address: UInt64, name: String?)] {
        guard let url else { return [] }
        let result = try runCommand(url, ["-p", "\(pid)"], timeout: 30)
        var inThread = false
        var frames: [(address: UInt64, name: String?)] = []
        for line in result.stdout.split(separator: "\n") {
            if line.hasPrefix("TID ") {
                inThread = line == "TID \(tid):"
                continue
            }
            guard inThread, line.hasPrefix("#") else { continue }
            let words = line.split(separator: " ")
            guard words.count >= 2, let address = SymbolizedFrame.parseHex(String(words[1])) else { continue }
            frames.append((address, words.count >= 3 ? String(words[2]) : nil))
        }
        return frames
    }
}
