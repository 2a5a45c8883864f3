import Foundation
import Testing

@testable import StallCapture
@testable import StallMonitoring

@testable import StallSymbols
#if canImport(Glibc)
import Glibc
#endif

/// A real Rust program, built at test time in both manglings (skipped without rustc).
@Suite(.serialized) struct RustFixtureTests {
    static let builds = Result { () throws -> [String: URL] in
        let rustc = try NativeFixture.tool("rustc")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stallagent-rust-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var outputs: [String: URL] = [:]
        for (mangling, flags) in [("v0", ["-C", "symbol-mangling-version=v0"]), ("legacy", [])] {
            let output = directory.appendingPathComponent("rustfixture-\(mangling)")
            let result = try runCommand(
                rustc, ["-g", "-O", "-o", output.path, NativeFixture.sourceURL("rustfixture.rs").path] + flags,
                timeout: 120)
            guard result.status == 0 else { throw NativeFixtureError.failed(result.stderr) }
            outputs[mangling] = output
        }
        return outputs
    }

    static var available: Bool { (try? NativeFixture.tool("rustc")) != nil }

    /// Every Rust name in both binaries (std included: rustc 1.95's std is v0) demangles as
    /// binutils' c++filt does, once its hashes and crate disambiguators are removed.
    @Test(.enabled(if: available, "needs rustc")) func everyRustSymbolMatchesCxxfilt() throws {
        let builds = try Self.builds.get()
        let names = try Self.rustSymbols(in: Array(builds.values))
        #expect(names.count > 100)
        try Self.expectCxxfiltAgrees(names, atLeast: 100)
    }

    /// rustc's own compiler library: ~20 000 v0 names with every grammar feature a real
    /// compiler emits (const generics, dyn bounds, binders, closures, shims).
    @Test(.enabled(if: available, "needs rustc")) func everySymbolOfRustcDriverMatchesCxxfilt() throws {
        let rustc = try NativeFixture.tool("rustc")
        let sysroot = try runCommand(rustc, ["--print", "sysroot"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let lib = URL(fileURLWithPath: sysroot).appendingPathComponent("lib")
        let driver = try #require(
            (try? FileManager.default.contentsOfDirectory(atPath: lib.path))?.first { $0.hasPrefix("librustc_driver-") && $0.hasSuffix(".so") },
            "no librustc_driver-*.so in \(lib.path)")
        let names = try Self.rustSymbols(in: [lib.appendingPathComponent(driver)])
        #expect(names.count > 10_000)
        try Self.expectCxxfiltAgrees(names, atLeast: 10_000)
    }

    static func rustSymbols(in binaries: [URL]) throws -> [String] {
        var names = Set<String>()
        for url in binaries {
            let image = try ElfImage(path: url.path)
            ElfSymbolTable.forEachSymbol(in: try #require(image.elf)) { _, name, _ in
                let text = String(cString: name)
                if text.hasPrefix("_R") || (text.hasPrefix("_ZN") && text.contains("17h")) { names.insert(text) }
                return true
            }
        }
        return names.sorted()
    }

    static func expectCxxfiltAgrees(_ names: [String], atLeast minimum: Int) throws {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("rust-names-\(UUID().uuidString)")
        try names.joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: input) }
        let filt = try runCommand(URL(fileURLWithPath: "/bin/sh"), ["-c", "c++filt < '\(input.path)'"], timeout: 120)
        let reference = filt.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        try #require(reference.count >= names.count)
        var mismatches: [String] = []
        var compared = 0
        var bounded = 0
        for (name, expected) in zip(names, reference) where expected != name {
            compared += 1
            let normalized = Self.normalize(expected)
            let ours = RustDemangler.demangle(name)
            // Bounds we keep on purpose: output past maxOutput is refused (the raw name is
            // shown), and libiberty cannot print 128-bit constants (it writes `…_: i128`).
            if ours == nil && normalized.utf8.count > RustDemangler.maxOutput {
                bounded += 1
                continue
            }
            if expected.contains("_: i128") || expected.contains("_: u128") {
                bounded += 1
                continue
            }
            if ours != normalized { mismatches.append("\(name)\n  ours:     \(ours ?? "nil")\n  c++filt:  \(normalized)") }
        }
        #expect(compared >= minimum)
        #expect(bounded * 100 <= compared, "\(bounded) of \(compared) names skipped as over-long or 128-bit")
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(compared):\n\(mismatches.prefix(8).joined(separator: "\n"))")
    }

    /// c++filt prints rustc-demangle's non-alternate form; ours is the alternate one.
    static func normalize(_ text: String) -> String {
        var out = text
        for pattern in [
            #"\[[0-9a-f]+\]"#, #"::h[0-9a-f]{16}$"#, #"(?<=[0-9]): (?:[iu](?:8|16|32|64|128|size)|bool|char)"#, #"(?<=true|false): bool"#, #"(?<='): char"#,
        ] {
            out = out.replacingOccurrences(of: pattern, with: "", options: .regularExpression)
        }
        return out
    }

    @Test(.enabled(if: available, "needs rustc")) func liveStackNamesTheTraitImplAndItsLine() throws {
        let builds = try Self.builds.get()
        for mangling in ["v0", "legacy"] {
            let url = try #require(builds[mangling])
            let process = try FixtureProcess([], executable: url)
            defer { process.stop() }
            let deadline = Date().addingTimeInterval(5)
            var frames: [SymbolizedFrame] = []
            while Date() < deadline {
                frames = (try ProcessInspector(pid: process.pid).dump(tid: process.pid)).frames
                if frames.contains(where: { $0.function?.hasSuffix("::drain_all") == true }) { break }
                usleep(20_000)
            }
            let worker = try #require(frames.first { $0.function?.hasSuffix("::drain_all") == true }, "\(frames.map(\.displayName))")
            let expected =
                mangling == "v0"
                ? "<rustfixture::server::queue::Worker<u32> as rustfixture::server::queue::Drain>::drain_all"
                : "<rustfixture::server::queue::Worker<T> as rustfixture::server::queue::Drain>::drain_all"
            #expect(worker.function == expected)
            #expect(worker.file?.hasSuffix("rustfixture.rs") == true)
            #expect(worker.line != nil)
            #expect(frames.contains { $0.function == "rustfixture::main" })
        }
    }
}
