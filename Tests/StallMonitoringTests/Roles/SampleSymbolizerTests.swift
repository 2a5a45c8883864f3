import Testing

@testable import StallMonitoring
@testable import StallCapture
import StallDetection
import StallProc
import StallReports
@testable import StallSymbols

/// How samples' frames are named, and named again for a report, from a fake symbol source.
@Suite struct SampleSymbolizerTests {
    final class FakeSymbols: SampleSymbolizer.Target {
        let app = LoadedModule(
            path: "/opt/app/bin/app",
            mappings: [MemoryMapEntry.parse("00400000-00480000 r-xp 00000000 08:01 1234 /opt/app/bin/app")!], image: nil)
        /// The symbol tables' functions, by module offset of the looked-up address.
        var symbols: [UInt64: (name: String, offset: UInt64)] = [:]
        /// What a lookup without source lines gives for any stack.
        var withoutLines: [SymbolizedFrame] = []
        var fullLookups: [UInt64] = []
        var downloaded = false

        func module(containing address: UInt64) -> LoadedModule? {
            (0x40_0000..<0x48_0000).contains(address) ? app : nil
        }
        func functionSymbol(in module: LoadedModule, at offset: UInt64) -> (name: String, offset: UInt64)? { symbols[offset] }
        func symbolizeWithoutLines(_ stack: UnwoundStack) -> [SymbolizedFrame] { withoutLines }
        func symbolize(_ frame: UnwoundFrame, index: Int) -> SymbolizedFrame {
            fullLookups.append(frame.address)
            return SymbolizedFrame(
                index: 99, address: frame.address, stackPointer: 0, module: "app", modulePath: "/opt/app/bin/app", buildId: nil,
                moduleOffset: frame.address - 0x40_0000, function: "full_\(String(frame.address, radix: 16))", functionOffset: 0,
                approximate: false, file: "app.c", line: 42)
        }
        func refreshAfterDownloads() -> Bool {
            defer { downloaded = false }
            return downloaded
        }
    }

    static func frame(_ address: UInt64, sp: UInt64) -> UnwoundFrame {
        UnwoundFrame(address: address, stackPointer: sp, isSignalFrame: false)
    }

    /// A JIT frame: no module, named by the perf map.
    static let jit = SymbolizedFrame(
        index: 0, address: 0x7e00_0000_1000, stackPointer: 0x7ffd_0000, module: nil, modulePath: nil, buildId: nil, moduleOffset: nil,
        function: "LazyCompile:handler", functionOffset: nil, approximate: false)
    static let native = SymbolizedFrame(
        index: 1, address: 0x40_2020, stackPointer: 0x7ffd_0100, module: "app", modulePath: "/opt/app/bin/app", buildId: nil,
        moduleOffset: 0x2020, function: "run", functionOffset: 0x20, approximate: false)

    /// What detection keeps of a frame: its name (a nearest-symbol guess marked so) and site,
    /// or "module+0xOFFSET" with no site when unnamed.
    @Test func aSampledFrameKeepsItsNameSiteAndStack() {
        let named = SampleSymbolizer.sampledFrame(Self.native, appFrames: AppFrameRule())
        #expect(named.function == "run")
        #expect(named.module == "app")
        #expect(named.site == 0x20)
        #expect(named.cfa == 0x7ffd_0100)
        var guess = Self.native
        guess.approximate = true
        #expect(SampleSymbolizer.sampledFrame(guess, appFrames: AppFrameRule()).function == "run (approximate)")
        var unnamed = Self.native
        unnamed.function = nil
        let bare = SampleSymbolizer.sampledFrame(unnamed, appFrames: AppFrameRule())
        #expect(bare.function == "app+0x2020")
        #expect(bare.site == nil)
    }

    /// A batch sample is named from the symbol tables alone: a return address is looked up one
    /// byte earlier and its offset kept from the real address; outside every module a frame is
    /// named by its address.
    @Test func batchSamplesAreNamedFromTheSymbolTables() {
        let symbols = FakeSymbols()
        symbols.symbols[0x1010] = ("leaf", 0x10)
        symbols.symbols[0x201f] = ("caller", 0x1f)
        let namer = SampleSymbolizer(appFrames: AppFrameRule())
        let stack = UnwoundStack(
            frames: [Self.frame(0x40_1010, sp: 0x100), Self.frame(0x40_2020, sp: 0x200), Self.frame(0x7f00_0000_3000, sp: 0x300)],
            end: .complete)
        let frames = namer.frames(of: stack, batch: true, in: symbols)
        #expect(frames.map(\.function) == ["leaf", "caller", "?+0x7f0000003000"])
        #expect(frames.map(\.module) == ["app", "app", "?"])
        #expect(frames.map(\.site) == [0x10, 0x20, nil])
        #expect(frames.map(\.cfa) == [0x100, 0x200, 0x300])
        #expect(symbols.fullLookups.isEmpty)
        #expect(namer.frameCache.isEmpty)
    }

    /// A loop's sample takes the lookup without lines; its JIT frame is kept, since the perf
    /// map may have reused the address by the time the report is written. The report names
    /// that frame from the sample and the native one in full, at the report's index.
    @Test func aReportNamesJITFramesFromTheSampleAndTheRestInFull() {
        let symbols = FakeSymbols()
        symbols.withoutLines = [Self.jit, Self.native]
        let namer = SampleSymbolizer(appFrames: AppFrameRule())
        let frames = namer.frames(of: UnwoundStack(frames: [], end: .complete), batch: false, in: symbols)
        #expect(frames.map(\.function) == ["LazyCompile:handler", "run"])
        #expect(namer.frameCache.keys.sorted() == [Self.jit.address])

        let jit = namer.resolve(frames[0], index: 5, in: symbols)
        #expect(jit.function == "LazyCompile:handler")
        #expect(jit.index == 5)
        #expect(jit.stackPointer == frames[0].cfa)
        #expect(symbols.fullLookups.isEmpty)
        let native = namer.resolve(frames[1], index: 6, in: symbols)
        #expect(native.function == "full_402020")
        #expect(native.line == 42)
        #expect(native.index == 6)
        #expect(native.inApp == frames[1].isApp)
        #expect(symbols.fullLookups == [0x40_2020])

        // Debug files fetched since: what the sample kept gives way to the symbols.
        symbols.downloaded = true
        #expect(namer.resolve(frames[0], index: 0, in: symbols).function == "full_7e0000001000")
        #expect(namer.frameCache.isEmpty)
    }

    /// A Python frame's address is a bytecode instruction's: never looked up as native code,
    /// and never named by a native frame kept at the same address.
    @Test func aPythonFrameIsNamedFromItsSample() {
        let symbols = FakeSymbols()
        symbols.withoutLines = [Self.jit]
        let namer = SampleSymbolizer(appFrames: AppFrameRule())
        _ = namer.frames(of: UnwoundStack(frames: [], end: .complete), batch: false, in: symbols)
        let python = SampledFrame(
            function: "handle_request", module: "app.py", address: Self.jit.address, cfa: 0x5000, language: "python", site: 12)
        let named = namer.resolve(python, index: 2, in: symbols)
        #expect(named.function == "handle_request")
        #expect(named.module == "app.py")
        #expect(named.language == "python")
        #expect(named.index == 2)
        #expect(symbols.fullLookups.isEmpty)
    }

    /// Another tracer is said once, with its name read once; a second tracer is said anew.
    @Test func aTracerIsNotedOncePerTracer() {
        let namer = SampleSymbolizer(appFrames: AppFrameRule())
        var nameReads = 0
        func name() -> String {
            nameReads += 1
            return "strace"
        }
        #expect(namer.samplingNote == nil)
        #expect(namer.noteTracer(77, name: name))
        #expect(!namer.noteTracer(77, name: name))
        #expect(nameReads == 1)
        #expect(namer.samplingNote == "cannot sample: traced by PID 77 (strace)")
        #expect(namer.noteTracer(78, name: { "gdb" }))
        #expect(namer.samplingNote == "cannot sample: traced by PID 78 (gdb)")
    }

    /// An exec: frames kept for the old program name nothing in the new one.
    @Test func resetForgetsKeptFrames() {
        let namer = SampleSymbolizer(appFrames: AppFrameRule())
        namer.remember([Self.jit, Self.native])
        #expect(namer.frameCache.count == 2)
        namer.reset()
        #expect(namer.frameCache.isEmpty)
    }
}
