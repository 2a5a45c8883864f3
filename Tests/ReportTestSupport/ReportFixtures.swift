import DetectionTestSupport
import Foundation

import StallDetection

import StallReports
import StallSymbols

/// Test support for every test target that reads a report: stalls driven through a real `StallDetector` (via `DetectionScenario`) and a
/// report context whose resolver fills in everything a symbolizer would, so tests can tell
/// which frame was resolved at which index.
package enum ReportFixtures {
    package typealias S = DetectionScenario

    package static let pid: Int32 = 1234
    /// 2026-11-21 09:22:38 UTC minus the scenarios' monotonic origin.
    package static let wallClockOffset = 1_795_252_958.0

    package static let appImage = ReportBinaryImage(
        start: 0x40_0000, end: 0x48_0000, name: "app", path: "/opt/app/bin/app", buildId: "9f1cabcdef")
    package static let libcImage = ReportBinaryImage(
        start: 0x7f00_0000_0000, end: 0x7f00_0020_0000, name: "libc.so.6", path: "/usr/lib/x86_64-linux-gnu/libc.so.6",
        buildId: "c0ffee")
    package static let unusedImage = ReportBinaryImage(
        start: 0x7f00_1000_0000, end: 0x7f00_1010_0000, name: "libunused.so", path: "/usr/lib/libunused.so")

    package static func resolve(_ frame: SampledFrame, _ index: Int) -> SymbolizedFrame {
        let isApp = frame.module != "libc.so.6"
        let image = isApp ? appImage : libcImage
        return SymbolizedFrame(
            index: index, address: frame.address, stackPointer: frame.cfa, module: frame.module,
            modulePath: image.path, buildId: image.buildId, moduleOffset: frame.address &- image.start,
            function: frame.function, functionOffset: 0x10 + UInt64(index), approximate: false,
            file: isApp ? "\(frame.function).c" : nil, line: isApp ? 100 + index : nil)
    }

    package static func context(
        lockOwner: ReportLockOwner? = nil, termination: String? = nil, occurrence: Int = 1
    ) -> StallReportContext {
        StallReportContext(
            process: ReportProcessInfo(
                pid: pid, name: "stall-fixtures", path: "/opt/app/bin/app", buildId: "9f1cabcdef",
                commandLine: ["/opt/app/bin/app", "hang", "2"]),
            thread: ReportThreadInfo(tid: pid, name: "main"),
            wallClockOffset: wallClockOffset,
            resolveFrame: resolve,
            binaryImages: [unusedImage, libcImage, appImage],
            lockOwner: lockOwner,
            agent: ReportAgentStats(
                samples: 30, capturesWithStop: 28, capturesWithoutStop: 2, failedCaptures: 0, pauseP50Micros: 41,
                pauseP99Micros: 95, pauseTotalMicros: 1300, probeIntervalSeconds: 0.01),
            termination: termination,
            occurrence: occurrence,
            hostname: "builder")
    }

    package static let holder = ReportLockOwner(
        tid: 1235, name: "holder", detail: "blocked in nanosleep",
        frames: [
            resolve(S.frame("clock_nanosleep", cfa: 0x9000, module: "libc.so.6", address: 0x7f00_0000_1000), 0),
            resolve(S.frame("hold_lock", cfa: 0x9100, address: 0x40_2000), 1),
        ],
        waitChain: [pid, 1235], deadlock: false)

    /// CPU-bound: 0.5 s in leafA, then 1.0 s in leafB, both under work ← main; back to idle.
    package static func hangEnded() -> StallSnapshot {
        var scenario = S.inLoop()
        scenario.stack = S.stack("leafA", "work", "main")
        scenario.run(.running, for: 0.5)
        scenario.stack = S.stack("leafB", "work", "main")
        scenario.run(.running, for: 1.0)
        scenario.run(.idle, for: 0.1)
        return scenario.ended[0]
    }

    /// CPU-bound and still going: the first (detected) snapshot.
    package static func hangStarted() -> StallSnapshot {
        var scenario = S.inLoop()
        scenario.run(.running, for: 1.2)
        return scenario.started[0]
    }

    /// Waiting in the libc futex wrapper under lock_contention ← main.
    package static func lockScenario(seconds: Double = 1.3) -> S {
        var scenario = S.inLoop()
        scenario.stack = [
            S.frame("__futex_abstimed_wait_common", cfa: 0x6f00, module: "libc.so.6", address: 0x7f00_0000_2000),
            S.frame("lock_contention", cfa: 0x7000, address: 0x40_1000),
            S.frame("main", cfa: 0x7100, address: 0x40_0100),
        ]
        scenario.run(.lockWait, for: seconds)
        return scenario
    }

    package static func lockEnded() -> StallSnapshot {
        var scenario = lockScenario()
        scenario.run(.idle, for: 0.1)
        return scenario.ended[0]
    }

    package static func deadlocked() -> StallSnapshot {
        var scenario = lockScenario()
        let events = scenario.detector.setDeadlock(true, at: scenario.time)
        return events[0].snapshot!
    }

    package static func diedWhileHanging() -> StallSnapshot {
        var scenario = S.inLoop()
        scenario.run(.running, for: 1.6)
        scenario.finish(targetGone: true)
        return scenario.ended[0]
    }

    package static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "stallagent-reports-\(UUID().uuidString)"
        return path
    }
}
