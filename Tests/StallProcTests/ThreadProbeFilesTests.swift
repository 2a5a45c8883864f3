import Foundation
import Synchronization
import Testing

@testable import StallProc

#if canImport(Glibc)
import Glibc
#endif

/// The probe's files given back while a thread sleeps and taken again at the next read: the
/// same thread's, or none once it is gone. Read from this test process's own threads.
@Suite("ThreadProbeFiles")
struct ThreadProbeFilesTests {
    /// `/proc/thread-self` is `PID/task/TID`.
    private static func currentTid() -> Int32 {
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        return Int32(link.split(separator: "/").last ?? "") ?? 0
    }

    @Test func releasedFilesAreReopenedByTheNextRead() throws {
        let files = try ThreadProbeFiles(pid: getpid(), tid: getpid())
        let before = try #require(files.stat())
        files.release()
        #expect(!files.isHeld)
        let after = try #require(files.stat())
        #expect(files.isHeld)
        #expect(after.startTicks == before.startTicks)
        files.release()
        #expect(files.syscall() != nil)
        files.release()
        #expect(files.schedstat() != nil)
    }

    @Test func aThreadGoneWhileReleasedReadsAsGone() throws {
        let ready = DispatchSemaphore(value: 0)
        let finish = DispatchSemaphore(value: 0)
        let tid = Mutex<Int32>(0)
        let thread = Thread {
            tid.withLock { $0 = Self.currentTid() }
            ready.signal()
            finish.wait()
        }
        thread.start()
        ready.wait()
        let files = try ThreadProbeFiles(pid: getpid(), tid: tid.withLock { $0 })
        #expect(files.stat() != nil)
        files.release()
        finish.signal()
        // The thread exits; its task directory goes with it.
        let deadline = Date().addingTimeInterval(10)
        while FileManager.default.fileExists(atPath: "/proc/\(getpid())/task/\(tid.withLock { $0 })"), Date() < deadline {
            usleep(1000)
        }
        #expect(files.stat() == nil)
        #expect(files.syscall() == nil)
        #expect(!files.isHeld)
    }
}
