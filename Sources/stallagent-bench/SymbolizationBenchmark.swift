import Foundation
import StallCapture
import StallMonitoring

import StallSymbols
#if canImport(Glibc)
import Glibc
#endif

/// Cold and warm symbolization of a large module (the Swift runtime this binary links, and
/// libc with its DWARF debug file when installed): what a first stall report in a new
/// module costs, what every later frame costs, and the memory the tables keep.
public struct SymbolizationBenchmark {
    public var lookups = 2000
    public var log: (String) -> Void = {
        print($0)
        fflush(nil)
    }

    public init() {}

    /// The loaded copy of a library whose file name contains `name`, from this process's maps.
    static func loadedPath(containing name: String) -> String? {
        guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return nil }
        return maps.split(separator: "\n").compactMap { line -> String? in
            guard let slash = line.firstIndex(of: "/") else { return nil }
            let path = String(line[slash...])
            return path.contains(name) ? path : nil
        }.first
    }

    /// A release build links the Swift runtime statically: use the toolchain's copy.
    static func toolchainPath(_ name: String) -> String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        for directory in directories {
            let swift = URL(fileURLWithPath: String(directory)).appendingPathComponent("swift")
            guard FileManager.default.isExecutableFile(atPath: swift.path) else { continue }
            let library = swift.resolvingSymlinksInPath().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("lib/swift/linux/\(name)")
            if FileManager.default.fileExists(atPath: library.path) { return library.path }
        }
        return nil
    }

    public func run() {
        log("Symbolization (in-process, \(lookups) addresses spread over the module's code):")
        log("  module                       size       open+locate             first lookup  warm lookup p50 / p99   RSS delta")
        for name in ["libswiftCore.so", "libc.so.6"] {
            guard let path = Self.loadedPath(containing: name) ?? Self.toolchainPath(name) else {
                log("  \(name): not found")
                continue
            }
            measure(path)
        }
    }

    func measure(_ path: String) {
        let cache = ElfImageCache()
        let rssBefore = AgentResourceUsage.residentBytes()
        let t0 = DispatchTime.now().uptimeNanoseconds
        guard let image = cache.image(atPath: path, displayPath: path) else { return log("  \(path): unreadable") }
        let symbols = DebugFileLocator().symbols(for: image, modulePath: path, cache: cache)
        let text = image.segments.filter(\.executable)
        guard let segment = text.max(by: { $0.memorySize < $1.memorySize }) else { return }
        var rng = SystemRandomNumberGenerator()
        let addresses = (0..<lookups).map { _ in segment.virtualAddress + UInt64.random(in: 0..<segment.memorySize, using: &rng) }
        let t1 = DispatchTime.now().uptimeNanoseconds
        _ = symbols.lookup(addresses[0])  // builds the tables, opens DWARF
        let t2 = DispatchTime.now().uptimeNanoseconds
        var warm: [Double] = []
        var named = 0
        var withLines = 0
        for address in addresses.dropFirst() {
            let start = DispatchTime.now().uptimeNanoseconds
            let lookup = symbols.lookup(address)
            warm.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
            if lookup.function != nil { named += 1 }
            if lookup.line != nil { withLines += 1 }
        }
        let rssDelta = AgentResourceUsage.residentBytes() - rssBefore
        let p = Percentiles(warm)
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let debug = symbols.debugImage != nil ? "+debug file" : (symbols.hasSourceLines ? "+DWARF" : "symtab only")
        let name = (path as NSString).lastPathComponent.padding(toLength: 26, withPad: " ", startingAt: 0)
        let numbers =
            String(format: "%5.1f MB  %8.1f ms ", Double(size) / 1e6, Double(t1 - t0) / 1e6)
            + debug.padding(toLength: 12, withPad: " ", startingAt: 0)
            + String(
                format: "%8.1f ms   %6.1f / %6.1f µs   %+6.1f MB", Double(t2 - t1) / 1e6, p.p50, p.p99,
                Double(rssDelta) / 1e6)
        log("  " + name + " " + numbers)
        log("    \(named) of \(warm.count) addresses named, \(withLines) with a source line")
    }
}
