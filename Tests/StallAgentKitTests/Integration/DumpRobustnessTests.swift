import Foundation
import Testing

@testable import StallCapture
@testable import StallMonitoring

@testable import StallSymbols
#if canImport(Glibc)
import Glibc
#endif

/// Bad inputs to the capture path: stripped binaries, garbage stacks, uninterruptible I/O.
@Suite(.serialized) struct DumpRobustnessTests {
    /// A fully stripped executable: no crash; its own frames fall back to module + offset
    /// (or .dynsym names marked approximate), so they can be symbolicated later.
    @Test func strippedBinaryFallsBackToModuleOffsets() throws {
        let stripped = FileManager.default.temporaryDirectory.appendingPathComponent("stall-fixtures-stripped-\(getpid())")
        try? FileManager.default.removeItem(at: stripped)
        try FileManager.default.copyItem(at: FixtureProcess.executableURL, to: stripped)
        defer { try? FileManager.default.removeItem(at: stripped) }
        let strip = try runCommand(URL(fileURLWithPath: "/usr/bin/strip"), ["--strip-all", stripped.path])
        #expect(strip.status == 0, "\(strip.stderr)")
        let process = Process()
        process.executableURL = stripped
        process.arguments = ["spin"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try #require(KernelState.waitUntilSpinning(process.processIdentifier), "the fixture never ran its loop")
        let inspector = try ProcessInspector(pid: process.processIdentifier)
        let dump = try inspector.dump(tid: process.processIdentifier)
        #expect(dump.frames.count >= 3)
        let own = dump.frames.filter { $0.module == stripped.lastPathComponent }
        #expect(!own.isEmpty)
        for frame in own {
            #expect(frame.moduleOffset != nil && frame.buildId != nil)
            #expect(frame.function == nil || frame.approximate, "\(frame)")
        }
        #expect(!own.contains { $0.function == "spin_hot_loop" && !$0.approximate })
    }

    /// Random registers and stack bytes unwound against real modules: never a crash or a
    /// runaway, always a bounded list of frames.
    @Test func garbageSnapshotsDoNotCrashTheUnwinder() throws {
        let modules = try ProcessModules(pid: getpid())
        let unwinder = SnapshotUnwinder(modules: modules)
        var generator = SystemRandomNumberGenerator()
        let text = modules.modules.filter { $0.textEnd > $0.textStart }
        for round in 0..<300 {
            var registers = RegisterFile()
            for index in 0..<RegisterFile.count where Bool.random(using: &generator) {
                registers[index] = UInt64.random(in: 0...UInt64.max, using: &generator)
            }
            let stackStart: UInt64 = 0x7ffd_0000_0000 + UInt64(round) * 4096
            registers[RegisterFile.rsp] = stackStart
            if let module = text.randomElement(using: &generator), round % 2 == 0 {
                registers[RegisterFile.rip] = UInt64.random(in: module.textStart..<module.textEnd, using: &generator)
            }
            var stack = [UInt8](repeating: 0, count: Int.random(in: 0...8192, using: &generator))
            for i in stack.indices { stack[i] = UInt8.random(in: 0...255, using: &generator) }
            // Sprinkle plausible return addresses so the unwinder walks a while.
            if let module = text.first, stack.count >= 64 {
                for slot in stride(from: 0, to: stack.count - 8, by: 64) {
                    let value = UInt64.random(in: module.textStart..<module.textEnd, using: &generator)
                    withUnsafeBytes(of: value) { stack.replaceSubrange(slot..<slot + 8, with: $0) }
                }
            }
            let snapshot = ThreadSnapshot(
                pid: getpid(), tid: getpid(), registers: registers, stackStart: stackStart, stack: stack,
                method: .withoutStop, pauseNanos: 0, syscall: nil, timeNanos: 0)
            let result = unwinder.unwind(snapshot)
            #expect(result.frames.count <= unwinder.maxFrames)
            _ = Symbolizer(modules: modules).symbolize(result)
        }
    }

    /// A thread in write+fsync (often in D state): every dump returns promptly, the target is
    /// never left stopped or traced.
    @Test func uninterruptibleIOHasADeadline() throws {
        let fixture = try FixtureProcess(["io"])
        defer { fixture.signal(SIGTERM) }
        var options = ThreadCapturer.Options()
        options.stopDeadlineNanos = 200_000_000
        let inspector = try ProcessInspector(pid: fixture.pid, capturer: ThreadCapturer(options: options))
        for _ in 0..<20 {
            let start = Date()
            _ = try inspector.dump(tid: fixture.pid)
            #expect(Date().timeIntervalSince(start) < 3)
        }
        // A stop that arrived after its deadline is detached by a later reap.
        let deadline = Date().addingTimeInterval(10)
        repeat {
            inspector.capturer.reapPending(final: false)
            if inspector.capturer.pendingCount == 0 { break }
            usleep(10_000)
        } while Date() < deadline
        #expect(inspector.capturer.pendingCount == 0)
        #expect(fixture.procStatus?.tracer == 0)
    }
}
