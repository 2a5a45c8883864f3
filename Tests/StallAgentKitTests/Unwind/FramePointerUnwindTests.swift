import Foundation
import Testing

@testable import StallCapture
@testable import StallReports
@testable import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

/// Frame-pointer code read without a stop (RBP unknown), and code without CFI (generated at
/// run time), on a real process built at test time: the stack must be eu-stack's, frame for
/// frame, or end early with a note — never a guess.
@Suite(.serialized) struct FramePointerUnwindTests {
    /// Built once per test process.
    static let binary: Result<URL, Error> = Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stallagent-fp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let binary = directory.appendingPathComponent("framepointer")
        try NativeFixture.run(
            "cc", ["-O2", "-g", "-fno-omit-frame-pointer", "-o", binary.path, NativeFixture.sourceURL("framepointer.c").path])
        return binary
    }

    func start(_ mode: String) throws -> FixtureProcess {
        let process = try FixtureProcess([mode], executable: try FramePointerUnwindTests.binary.get())
        // "ready" is printed just before the wait (or, for `jit`, the spin): let the thread get there.
        if mode == "jit" {
            try #require(KernelState.waitUntilSpinning(process.pid), "\(mode): never ran its loop")
        } else {
            try #require(KernelState.waitUntilBlocked(process.pid, in: mode == "epoll" ? [232, 281, 441] : [0]), "\(mode): never in its wait")
        }
        return process
    }

    func names(_ dump: ThreadDump) -> [String] { dump.frames.map { $0.function ?? $0.displayName } }

    func expectSameAsEuStack(_ dump: ThreadDump, pid: Int32, sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard EuStack.url != nil else {
            print("FramePointerUnwindTests: eu-stack (elfutils) not installed; comparing names only")
            return
        }
        let reference = try EuStack.addresses(pid: pid, tid: pid)
        #expect(!reference.isEmpty, sourceLocation: sourceLocation)
        #expect(
            dump.frames.map(\.address) == reference, "ours \(names(dump)) vs eu-stack \(reference.map { String($0, radix: 16) })",
            sourceLocation: sourceLocation)
    }

    func expectFramePointerStack(_ dump: ThreadDump, syscall: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(dump.captureMethod == .withoutStop, sourceLocation: sourceLocation)
        #expect(dump.unwindEnd == .complete, "\(names(dump))", sourceLocation: sourceLocation)
        let expected = [syscall, "fp_block", "fp_waiter", "fp_middle", "fp_outer", "main"]
        #expect(Array(names(dump).prefix(expected.count)) == expected, sourceLocation: sourceLocation)
        #expect(dump.frames.last?.function == "_start", sourceLocation: sourceLocation)
    }

    @Test func idleFramePointerCodeUnwindsExactlyWithoutAStop() throws {
        let fixture = try start("epoll")
        let inspector = try ProcessInspector(pid: fixture.pid)
        let dump = try inspector.dump(tid: fixture.pid)
        #expect(dump.activity == .idle)
        expectFramePointerStack(dump, syscall: "epoll_wait")
        try expectSameAsEuStack(dump, pid: fixture.pid)
    }

    @Test func blockedFramePointerCodeUnwindsExactlyWithoutAStop() throws {
        let fixture = try start("read")
        let inspector = try ProcessInspector(pid: fixture.pid)
        let dump = try inspector.dump(tid: fixture.pid)
        expectFramePointerStack(dump, syscall: "read")
        try expectSameAsEuStack(dump, pid: fixture.pid)
    }

    /// The fixture is built so the first plausible frame record above fp_block's stack
    /// pointer is a stale one (what the unwinder used to take): the test would pass for the
    /// wrong reason otherwise.
    @Test func theFirstPlausibleRecordIsAStaleOne() throws {
        let fixture = try start("epoll")
        let inspector = try ProcessInspector(pid: fixture.pid)
        let (snapshot, stack) = try inspector.captureStack(tid: fixture.pid, activity: .idle)
        #expect(snapshot.registers[RegisterFile.rbp] == nil)
        try #require(stack.frames.count > 3)
        let trueRecord = stack.frames[2].stackPointer - 16
        let context = inspector.unwinder.context
        let first = snapshot.stack.withUnsafeBytes { bytes -> UInt64? in
            context.stackStart = snapshot.stackStart
            context.stack = bytes
            defer { context.stack = UnsafeRawBufferPointer(start: nil, count: 0) }
            var slot = stack.frames[1].stackPointer
            while slot < trueRecord {
                if let saved = context.readWord(slot), let ra = context.readWord(slot + 8),
                    saved > slot, context.isInStack(saved), context.isPlausibleReturnAddress(ra)
                {
                    return slot
                }
                slot += 8
            }
            return nil
        }
        #expect(first != nil, "no stale record below the true one: the fixture no longer tests the search")
    }

    /// Generated code (anonymous executable memory, no CFI, a frame record) between C frames:
    /// stepped by its record, CFI resumes in the caller, named from the perf map.
    @Test func jitFrameIsSteppedByItsFrameRecord() throws {
        let fixture = try start("jit")
        defer { unlink("/tmp/perf-\(fixture.pid).map") }
        let inspector = try ProcessInspector(pid: fixture.pid)
        let dump = try inspector.dump(tid: fixture.pid)
        #expect(dump.captureMethod == .ptraceStop)
        #expect(Array(names(dump).prefix(4)) == ["jit_callee_spin", "JS:*generatedTrampoline app.js:7", "run_jit", "main"])
        #expect(dump.frames.last?.function == "_start")
        #expect(dump.unwindEnd == .complete)
        #expect(dump.frames[1].module == nil)
    }

    @Test func jitFrameWithoutAStop() throws {
        let fixture = try start("jitread")
        defer { unlink("/tmp/perf-\(fixture.pid).map") }
        let inspector = try ProcessInspector(pid: fixture.pid)
        let dump = try inspector.dump(tid: fixture.pid)
        #expect(dump.captureMethod == .withoutStop)
        #expect(Array(names(dump).prefix(5)) == ["read", "jit_callee_read", "JS:*generatedTrampoline app.js:7", "run_jit", "main"])
        #expect(dump.frames.last?.function == "_start")
        #expect(dump.unwindEnd == .complete)
        try expectSameAsEuStack(dump, pid: fixture.pid)
    }

    /// A blocked thread is sampled again and again with the same stack: the search's answer
    /// is remembered per stack content, and a changed stack is searched afresh.
    @Test func repeatedUnwindsOfOneStackAgree() throws {
        let fixture = try start("read")
        let inspector = try ProcessInspector(pid: fixture.pid)
        let (snapshot, first) = try inspector.captureStack(tid: fixture.pid, activity: .blockedCall)
        #expect(!inspector.unwinder.context.recoveredRecords.isEmpty)
        for _ in 0..<3 {
            let again = inspector.unwinder.unwind(snapshot)
            #expect(again.frames == first.frames && again.end == first.end)
        }
        var emptied = snapshot
        for index in 64..<emptied.stack.count { emptied.stack[index] = 0 }
        let ended = inspector.unwinder.unwind(emptied)
        #expect(ended.end == .missingRegister)
        #expect(first.frames.starts(with: ended.frames))
    }

    /// Damaged copies of a real stop-free snapshot: data where a return address should be ends
    /// the stack (no frame built from it), and with no usable frame record the stack ends at
    /// the frame that needed RBP.
    @Test func damagedStacksEndWithANoteNotAGuess() throws {
        let fixture = try start("epoll")
        let inspector = try ProcessInspector(pid: fixture.pid)
        let (snapshot, stack) = try inspector.captureStack(tid: fixture.pid, activity: .idle)
        try #require(stack.end == .complete && stack.frames.count >= 6)
        let unwinder = inspector.unwinder
        func word(at address: UInt64, in bytes: [UInt8]) -> UInt64 {
            bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: Int(address - snapshot.stackStart), as: UInt64.self) }
        }
        func replacing(_ address: UInt64, with value: UInt64, in bytes: inout [UInt8]) {
            withUnsafeBytes(of: value) { bytes.replaceSubrange(Int(address - snapshot.stackStart)..<Int(address - snapshot.stackStart) + 8, with: $0) }
        }
        let bogus: UInt64 = 0x4014_0000_0000_0000  // a double (5.0) where a return address was

        // fp_outer's return address into main, overwritten with data.
        var damaged = snapshot
        let mainFrame = stack.frames[5]
        replacing(mainFrame.stackPointer - 8, with: bogus, in: &damaged.stack)
        let broken = unwinder.unwind(damaged)
        #expect(!broken.frames.contains { $0.address == bogus })
        #expect(broken.frames.dropFirst().allSatisfy { inspector.modules.mapping(containing: $0.address)?.executable == true })
        #expect(broken.end != .complete, "\(broken.frames.map { String($0.address, radix: 16) })")
        // Whatever it ends with, the frames it shows are the true ones.
        #expect(stack.frames.starts(with: broken.frames))

        // Every return address above fp_block's stack pointer gone: no record to find.
        var wiped = snapshot
        var slot = stack.frames[1].stackPointer
        while slot + 8 <= snapshot.stackStart + UInt64(snapshot.stack.count) {
            if inspector.modules.mapping(containing: word(at: slot, in: wiped.stack))?.executable == true {
                replacing(slot, with: 0, in: &wiped.stack)
            }
            slot += 8
        }
        let ended = unwinder.unwind(wiped)
        #expect(ended.end == .missingRegister)
        #expect(ended.frames.map(\.address) == Array(stack.frames.prefix(2).map(\.address)))
    }
}
