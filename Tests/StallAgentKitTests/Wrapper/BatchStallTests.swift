import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The batch rule end to end: a wrapped test runner that never idles gets one report per slow
/// test, named by the test, with the right reason, and nothing for its fast tests.
@Suite(.serialized, .tags(.laneTwo)) struct BatchStallTests {
    let agent = FixtureProcess.stallagentURL
    let fixtures = FixtureProcess.executableURL.path

    struct Report {
        var reason: String
        var phase: String
        var processName: String
        var processPath: String
        var functions: [String]
        var files: [String]
        var duration: Double = 0
    }

    /// Writes `source` as `file` in a fresh directory, runs pytest on it under the agent and
    /// returns pytest's result and the reports written.
    func wrappedPytest(_ source: String, file: String, pytestOptions: [String] = []) throws -> (
        result: CommandResult, reports: [Report]
    ) {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("pytest-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let suite = work.appendingPathComponent(file)
        try source.write(to: suite, atomically: true, encoding: .utf8)
        let dir = work.appendingPathComponent("reports").path
        let result = try runCommand(
            agent, ["--report-dir", dir, "--", "/usr/bin/env", "python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"] + pytestOptions + [suite.path],
            timeout: 180)
        return (result, try reports(in: dir))
    }

    func reports(in directory: String) throws -> [Report] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }.sorted().compactMap { name in
            let data = try Data(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent(name))
            guard let json = try JSONSerialization.jsonObject(with: data) as? [String: Any], json["kind"] as? String == "stall",
                let reason = json["reason"] as? [String: Any], let process = json["process"] as? [String: Any],
                let heaviest = json["heaviestStack"] as? [String: Any], let frames = heaviest["frames"] as? [[String: Any]]
            else { return nil }
            return Report(
                reason: reason["name"] as? String ?? "?", phase: json["phase"] as? String ?? "?",
                processName: process["name"] as? String ?? "?", processPath: process["path"] as? String ?? "?",
                functions: frames.compactMap { $0["function"] as? String }, files: frames.compactMap { $0["file"] as? String },
                duration: json["durationSeconds"] as? Double ?? 0)
        }
    }

    /// The one-line summaries on stderr: (reason, culprit function).
    func summaries(_ stderr: String) -> [(reason: String, function: String)] {
        stderr.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ")
            guard line.hasPrefix("stall #"), words.count > 6, let at = words.firstIndex(of: "in") else { return nil }
            return (String(words[3]), String(words[at + 1]))
        }
    }

    @Test func cRunnerGetsOneReportPerSlowTest() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("batch-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try runCommand(agent, ["--report-dir", dir, "--", fixtures, "batch"], timeout: 120)
        #expect(result.stdout.contains("test deadlock_test") && result.stdout.contains("done"), "\(result.stdout)")
        #expect(result.status == 1, "the runner's status passes through: \(result.stderr)")
        let found = summaries(result.stderr)
        #expect(found.map(\.function) == ["sleepy_test", "spinning_test", "deadlock_test"], "\(result.stderr)")
        let reasons = Dictionary(found.map { ($0.function, $0.reason) }, uniquingKeysWith: { a, _ in a })
        #expect(reasons["sleepy_test"] == "blocked")
        // On a saturated host a CPU-bound test may get less than the threshold of CPU time:
        // the classifier then says starved, which is the truth there.
        #expect(["hang", "starved"].contains(reasons["spinning_test"] ?? "?"))
        #expect(["lock", "deadlock"].contains(reasons["deadlock_test"] ?? "?"))
        let written = try reports(in: dir)
        #expect(written.count == 3)
        #expect(written.allSatisfy { $0.phase == "batch" })
        #expect(!written.contains { $0.functions.contains { $0.hasPrefix("fast_test_") } }, "a fast test was reported")
    }

    /// The same runner under a shell: a descendant is watched only once it has lived half the
    /// threshold, so its first sample is already inside the first slow test. That sample is not
    /// its start-up and teaches no runner frames (issue 27: `sleepy_test` went unreported).
    @Test(.tags(.hostile)) func attack21_aRunnerUnderAShellGetsEveryReportThoughItStallsAtOnce() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("batch-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try runCommand(agent, ["--report-dir", dir, "--", "/bin/sh", "-c", "'\(fixtures)' batch; true"], timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(summaries(result.stderr).map(\.function) == ["sleepy_test", "spinning_test", "deadlock_test"], "\(result.stderr)")
        let written = try reports(in: dir)
        #expect(written.count == 3)
        #expect(written.allSatisfy { $0.phase == "batch" && $0.processName == "stall-fixtures" })
        #expect(!written.contains { $0.functions.contains { $0.hasPrefix("fast_test_") } }, "a fast test was reported")
    }

    /// `node --test` runs each test file in a child node, found half a threshold late: the slow
    /// test is one hang named by its JavaScript function (read from V8's objects), the fast
    /// ones nothing (issues 25, 26). 12 s, because the debug agent takes about 2.5 s to read
    /// node's symbols before its first sample, and twice that beside two CPU hogs (9 s gave no
    /// report there once in three runs).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/node"), "needs /usr/bin/node (scripts/setup installs nodejs)"))
    func nodeTestRunnerGetsOneReportForItsSlowTest() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("node-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        try """
        const test = require('node:test');
        function busy(ms) { const end = Date.now() + ms; let n = 0; while (Date.now() < end) n++; return n; }
        test('fast one', () => { busy(10); });
        test('slow cpu', () => { busy(12000); });
        test('fast two', () => { busy(10); });
        """.write(to: work.appendingPathComponent("slow.test.js"), atomically: true, encoding: .utf8)
        let dir = work.appendingPathComponent("reports").path
        let script = "cd '\(work.path)' && exec /usr/bin/node --test"
        let result = try runCommand(agent, ["--report-dir", dir, "--", "/bin/sh", "-c", script], timeout: 120)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let written = try reports(in: dir)
        // Before JavaScript frames were named, V8 re-tiering the spinning function (a new
        // stack slot each time) cut the test into two or three pieces; before JavaScript frames
        // were known by their frame pointer and torn stacks set aside, into two to four on a
        // fast machine (one run in three over the allowed three). One piece more is still
        // allowed where a sample lands between two frames. Never nothing, never a fast test.
        let all = "\(written.map { ($0.reason, $0.duration, $0.functions.prefix(6)) })\n\(result.stderr)"
        #expect((1...2).contains(written.count), "\(all)")
        #expect(written.allSatisfy { ["hang", "starved"].contains($0.reason) && $0.processName == "node" && $0.duration >= 1 }, "\(all)")
        #expect(written.map(\.duration).reduce(0, +) >= 2, "\(all)")
        // Named by the test's helper, a JavaScript frame read from V8's own objects.
        #expect(written.allSatisfy { $0.functions.contains("busy") }, "\(all)")
    }

    /// A runner that runs each test in a thread of its own and joins it (Rust libtest's shape,
    /// whatever the rustc): the joined thread is watched in the main thread's stead, so each
    /// slow test is one stall of its length, named by it, with that thread's state as reason.
    @Test func aTestInAThreadOfItsOwnIsOneStallOfThatThread() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("batch-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try runCommand(agent, ["--report-dir", dir, "--threshold", "1s", "--", fixtures, "thread-batch"], timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        let found = summaries(result.stderr)
        #expect(found.map(\.function) == ["sleepy_test", "spinning_test"], "\(result.stderr)")
        #expect(found.first?.reason == "blocked")
        #expect(["hang", "starved"].contains(found.last?.reason ?? "?"))
        let written = try reports(in: dir)
        try #require(written.count == 2, "\(result.stderr)")
        #expect(written.allSatisfy { abs($0.duration - 3) <= 0.3 && !$0.functions.contains("run_in_thread") }, "\(written.map(\.duration))")
        #expect(result.stderr.contains("thread sleepy ["), "\(result.stderr)")
        let text = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".txt") }.sorted()
        let first = try String(contentsOfFile: dir + "/" + text[0], encoding: .utf8)
        #expect(first.contains("Description:         thread sleepy ["), "\(first)")
        #expect(first.contains("which the main thread waited for, blocked"), "\(first)")
    }

    /// ctest runs each test as a process of its own, found half a threshold late: a compiled
    /// program is timed from its own start, so each slow test is one report of its length
    /// named by its function (before: 1.45 s for a 2 s sleep, 2.33 s for 3 s of CPU).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ctest"), "needs ctest (scripts/setup installs cmake)"))
    func ctestGetsOneReportOfItsLengthPerSlowTest() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("ctest-\(UUID().uuidString)")
        let build = work.appendingPathComponent("build")
        try FileManager.default.createDirectory(at: build, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        try """
        cmake_minimum_required(VERSION 3.10)
        project(slow C)
        set(CMAKE_C_FLAGS "-g -O1 -fno-omit-frame-pointer")
        add_executable(slowtest slowtest.c)
        enable_testing()
        add_test(NAME fast COMMAND slowtest fast)
        add_test(NAME sleepy COMMAND slowtest sleepy)
        add_test(NAME spinning COMMAND slowtest spinning)
        """.write(to: work.appendingPathComponent("CMakeLists.txt"), atomically: true, encoding: .utf8)
        try """
        #include <string.h>
        #include <time.h>
        #include <unistd.h>
        static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
        __attribute__((noinline)) static unsigned long helper(unsigned long n) { unsigned long s = 0; for (unsigned long i = 0; i < n; i++) s += i * i % 7; return s; }
        __attribute__((noinline)) static int test_fast(void) { usleep(200000); return 0; }
        __attribute__((noinline)) static int test_sleepy(void) { sleep(2); return 0; }
        __attribute__((noinline)) static int test_spinning(void) { double end = now() + 3; unsigned long s = 0; while (now() < end) s += helper(100000); return s == 1; }
        int main(int argc, char **argv) {
            if (argc > 1 && !strcmp(argv[1], "fast")) return test_fast();
            if (argc > 1 && !strcmp(argv[1], "sleepy")) return test_sleepy();
            return test_spinning();
        }
        """.write(to: work.appendingPathComponent("slowtest.c"), atomically: true, encoding: .utf8)
        let shell = URL(fileURLWithPath: "/bin/sh")
        let configure = try runCommand(shell, ["-c", "cd '\(build.path)' && cmake .. >/dev/null && make -s"], timeout: 180)
        try #require(configure.status == 0, "\(configure.stdout)\n\(configure.stderr)")
        let dir = work.appendingPathComponent("reports").path
        let result = try runCommand(
            agent, ["--report-dir", dir, "--threshold", "1s", "--", "/bin/sh", "-c", "cd '\(build.path)' && exec ctest"], timeout: 120)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("100% tests passed"), "\(result.stdout)")
        let written = try reports(in: dir).sorted { $0.duration < $1.duration }
        let all = "\(written.map { ($0.reason, $0.duration, $0.functions.prefix(4)) })\n\(result.stderr)"
        try #require(written.count == 2, "\(all)")
        #expect(written[0].reason == "blocked" && abs(written[0].duration - 2) <= 0.2 && written[0].functions.contains("test_sleepy"), "\(all)")
        #expect(
            ["hang", "starved"].contains(written[1].reason) && abs(written[1].duration - 3) <= 0.3
                && written[1].functions.contains("test_spinning"), "\(all)")
        #expect(summaries(result.stderr).map(\.function) == ["test_sleepy", "test_spinning"], "\(all)")
    }

    /// Rust's libtest runs each test in a thread of its own while the main thread waits on a
    /// channel: that thread is watched in the main thread's stead, so each slow test is one
    /// stall of its length named by the test (before: one stall of both tests' lengths in
    /// `Thread::park`). Built with `rustc --test` (scripts/setup installs Debian's rustc).
    @Test(.enabled(if: BatchStallTests.rustc != nil, "needs rustc (scripts/setup installs it)"))
    func rustTestsAreOneStallEachNamedByTheTest() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("rust-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        try """
        pub fn helper(n: u64) -> u64 {
            let mut s = 0u64;
            for i in 0..n { s = s.wrapping_add(i * i % 7); }
            s
        }
        #[cfg(test)]
        mod tests {
            use super::*;
            use std::time::{Duration, Instant};
            #[test]
            fn test_a_fast() { std::thread::sleep(Duration::from_millis(200)); }
            #[test]
            fn test_b_sleep() { std::thread::sleep(Duration::from_secs(2)); }
            #[test]
            fn test_c_spin() {
                let end = Instant::now() + Duration::from_secs(3);
                let mut total = 0u64;
                while Instant::now() < end { total = total.wrapping_add(helper(100000)); }
                assert!(total != 1);
            }
        }
        """.write(to: work.appendingPathComponent("slowtests.rs"), atomically: true, encoding: .utf8)
        let binary = work.appendingPathComponent("slowtests").path
        let build = try runCommand(
            URL(fileURLWithPath: Self.rustc!), ["--test", "-g", "-o", binary, work.appendingPathComponent("slowtests.rs").path], timeout: 180)
        try #require(build.status == 0, "\(build.stderr)")
        let dir = work.appendingPathComponent("reports").path
        let result = try runCommand(agent, ["--report-dir", dir, "--threshold", "1s", "--", binary, "--test-threads=1"], timeout: 120)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("3 passed"), "\(result.stdout)")
        let written = try reports(in: dir).sorted { $0.duration < $1.duration }
        let all = "\(written.map { ($0.reason, $0.duration, $0.functions.prefix(5)) })\n\(result.stderr)"
        try #require(written.count == 2, "\(all)")
        #expect(written[0].reason == "blocked" && abs(written[0].duration - 2) <= 0.2, "\(all)")
        #expect(written[0].functions.contains("slowtests::tests::test_b_sleep"), "\(all)")
        #expect(["hang", "starved"].contains(written[1].reason) && abs(written[1].duration - 3) <= 0.3, "\(all)")
        #expect(written[1].functions.contains("slowtests::tests::test_c_spin"), "\(all)")
        let named = summaries(result.stderr).map(\.function)
        #expect(named == ["slowtests::tests::test_b_sleep", "slowtests::tests::test_c_spin"], "\(all)")
    }

    /// rustup's rustc for root (what a Rust user runs), or Debian's. Debian's 1.63 runs
    /// `--test-threads=1` tests on the main thread itself; rustup's 1.95 runs each in a thread.
    static let rustc: String? = ["/root/.cargo/bin/rustc", "/usr/bin/rustc"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// `--batch-threshold` above the slow tests' length: nothing is reported.
    @Test func batchThresholdApplies() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("batch-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try runCommand(agent, ["--report-dir", dir, "--batch-threshold", "6s", "--", fixtures, "batch"], timeout: 120)
        #expect(result.status == 1)
        #expect(summaries(result.stderr).isEmpty, "\(result.stderr)")
    }

    /// A shell waiting for its child is not stalled; the child is (named by what it runs).
    @Test func parentWaitingForChildIsNotAStall() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("batch-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try runCommand(agent, ["--report-dir", dir, "--", "/bin/sh", "-c", "sleep 2.5; exit 4"], timeout: 60)
        #expect(result.status == 4)
        let written = try reports(in: dir)
        #expect(!written.contains { $0.processName == "sh" }, "the waiting shell was reported")
        // Found after its start (a descendant), the sleep is the stall, timed from its own start
        // (a compiled program); it ended when its parent reaped it: unseen by the agent ("then
        // ended"), or caught as a zombie first ("then exited", seen beside two CPU hogs) —
        // blocked either way, never died.
        #expect(written.count == 1, "\(written.map(\.processName))")
        #expect(written.allSatisfy { $0.processName == "sleep" && $0.reason == "blocked" }, "\(written.map(\.processName))")
        #expect(result.stderr.contains("then ended") || result.stderr.contains("then exited"), "\(result.stderr)")
        #expect(!result.stderr.contains("died"), "\(result.stderr)")
    }

    static let pytestSuite = """
        import threading, time

        def test_fast_0(): assert sum(range(1000)) > 0
        def test_fast_1(): time.sleep(0.01)

        def test_sleepy():
            time.sleep(5)

        def test_fast_2(): assert [1, 2] == [1, 2]
        def test_fast_3(): time.sleep(0.3)

        def test_cpu():
            end = time.monotonic() + 3
            x = 0
            while time.monotonic() < end:
                x += 1

        def test_fast_4(): time.sleep(0.3)

        def test_deadlock():
            a, b = threading.Lock(), threading.Lock()
            both = threading.Barrier(2)
            def partner():
                with b:
                    both.wait()
                    if a.acquire(timeout=4):
                        a.release()
            t = threading.Thread(target=partner, name="partner")
            with a:
                t.start()
                both.wait()
                with b:
                    pass
            t.join()

        def test_fast_5(): assert True
        def test_fails(): assert 1 == 2
        """

    /// The shapes real suites have (issue 25): a test looping over a helper of its own, a test
    /// joining a thread, a unittest case made of subTests, hypothesis tests (each example is a
    /// call of the test function: sleeping, and on the CPU), a fast test.
    static let shapesSuite = """
        import threading, time, unittest
        from hypothesis import HealthCheck, given, settings, strategies as st

        def helper(n):
            total = 0
            for i in range(n):
                total += i * i
            return total

        def test_loop_over_helper():
            end = time.monotonic() + 3
            while time.monotonic() < end:
                helper(2000)

        def _worker():
            time.sleep(2)

        def test_join():
            thread = threading.Thread(target=_worker)
            thread.start()
            thread.join()

        def test_fast():
            time.sleep(0.2)

        @settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(st.integers())
        def test_property(n):
            time.sleep(0.05)

        @settings(max_examples=120, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(st.lists(st.integers()))
        def test_property_cpu(xs):
            # By the clock, not by a count: 120 x 12.5 ms is 1.5 s on any machine.
            end = time.monotonic() + 0.0125
            while time.monotonic() < end:
                helper(200)

        class SubTests(unittest.TestCase):
            def test_sub(self):
                for i in range(4):
                    with self.subTest(i=i):
                        time.sleep(0.5)
        """

    /// Each slow test of `shapesSuite` is one report of its length (±10 % of pytest's own
    /// `--durations`), named by the test (and the helper it spent its time in), the join
    /// `blocked`; the fast test none.
    @Test(.tags(.timed)) func eachSlowTestShapeIsOneStallOfItsLength() throws {
        let probe = try runCommand(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import pytest, hypothesis"], timeout: 60)
        guard probe.status == 0 else {
            try Test.cancel("pytest or hypothesis is not importable by python3 (scripts/setup installs them)")
        }
        let (result, written) = try wrappedPytest(Self.shapesSuite, file: "test_shapes.py", pytestOptions: ["--durations=0"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let durations = Self.durations(result.stdout)
        let all = "\(written.map { ($0.reason, $0.duration, $0.functions.prefix(8)) })"
        #expect(written.count == 5, "\(all)")
        for (test, reasons) in [
            ("test_loop_over_helper", ["hang", "starved"]), ("test_join", ["blocked"]), ("SubTests.test_sub", ["blocked"]),
            ("test_property", ["blocked"]), ("test_property_cpu", ["hang", "starved"]),
        ] {
            let seconds = try #require(durations[String(test.split(separator: ".").last!)], "\(test): \(result.stdout)")
            let named = written.filter { $0.functions.contains(test) }
            #expect(named.count == 1, "\(test): \(named.count) reports: \(all)")
            #expect(named.allSatisfy { abs($0.duration - seconds) <= seconds * 0.10 }, "\(test): \(named.map(\.duration)) s, pytest \(seconds) s")
            #expect(named.allSatisfy { reasons.contains($0.reason) }, "\(test): \(named.map(\.reason))")
        }
        let lines = summaries(result.stderr)
        #expect(lines.contains { $0.function == "test_loop_over_helper" }, "\(result.stderr)")
        #expect(result.stderr.contains("in test_loop_over_helper → helper"), "\(result.stderr)")
        #expect(!written.contains { $0.functions.contains("test_fast") }, "\(all)")
    }

    /// pytest's `--durations` lines ("2.86s call     tests/test_x.py::Case::test_y") as test → seconds.
    static func durations(_ stdout: String) -> [String: Double] {
        var found: [String: Double] = [:]
        for line in stdout.split(separator: "\n") {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard words.count == 3, words[1] == "call", words[0].hasSuffix("s"), let seconds = Double(words[0].dropLast()),
                let name = words[2].split(separator: ":").last
            else { continue }
            found[String(name)] = seconds
        }
        return found
    }

    static let moreItertools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/suites/more_itertools-11.2.1")

    /// A real third-party suite (more-itertools 11.2.1's recipe tests, from its sdist; scripts/
    /// setup fetches it), wrapped as a CI job would: the same exit status and pass count as
    /// unwrapped, and, at `--threshold 2s`, every test pytest's own `--durations` puts over the
    /// threshold (by more than a tenth) has exactly one report naming it, of its length (±10 %),
    /// and none under 80 % of it has any.
    @Test func aRealSuiteGetsOneReportPerTestOverTheThreshold() throws {
        let tests = Self.moreItertools.appendingPathComponent("tests/test_recipes.py").path
        guard FileManager.default.fileExists(atPath: tests) else {
            try Test.cancel("more-itertools' sdist is not in .build/suites (scripts/setup fetches it)")
        }
        let probe = try runCommand(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import pytest"], timeout: 60)
        guard probe.status == 0 else { try Test.cancel("pytest is not importable by python3 (scripts/setup installs it)") }
        // The whole file: test_primes (12 s on an idle 2-core EPYC, 30 s beside other test lanes)
        // is the one test over the threshold on a fast machine; the next, 1.1 s.
        let pytest = ["/usr/bin/env", "python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0", tests]
        let bare = try runCommand(URL(fileURLWithPath: pytest[0]), Array(pytest.dropFirst()), timeout: 300)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("suite-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let wrapped = try runCommand(agent, ["--threshold", "2s", "--report-dir", dir, "--"] + pytest, timeout: 300)
        func passed(_ output: String) -> String? {
            output.split(separator: "\n").last { $0.contains(" passed") }.map { String($0.split(separator: " in ").first ?? "") }
        }
        #expect(wrapped.status == bare.status, "\(wrapped.stderr)")
        #expect(passed(wrapped.stdout) != nil && passed(wrapped.stdout) == passed(bare.stdout), "\(wrapped.stdout)")
        let durations = Self.durations(wrapped.stdout).map { (test: $0.key, seconds: $0.value) }
        #expect(!durations.isEmpty, "\(wrapped.stdout)")
        let written = try reports(in: dir)
        let all = "\(written.map { ($0.reason, $0.duration, $0.functions.prefix(12)) })"
        for (test, seconds) in durations {
            let named = written.filter { $0.functions.contains { $0 == test || $0.hasSuffix("." + test) } }
            if seconds > 2.2 {
                #expect(named.count == 1, "\(test) (\(seconds) s): \(named.count) reports: \(all)")
                #expect(named.allSatisfy { abs($0.duration - seconds) <= seconds * 0.10 }, "\(test) (\(seconds) s): \(all)")
            }
            // Beside two CPU hogs, a 1.78 s test was not reported and the lengths were within
            // 2 % of pytest's; before tests were dated between samples, a 1.67 s one was
            // reported as 2.44 s beside two other test lanes.
            if seconds < 1.6 { #expect(named.isEmpty, "\(test) (\(seconds) s) was reported: \(all)") }
        }
        #expect(durations.contains { $0.seconds > 2.2 }, "no test over the threshold: \(wrapped.stdout)")
    }

    /// pytest through pyenv's shim (bash exec'ing python): one report per slow test, named by
    /// the test's Python function (CPython 3.11–3.13 frames), nothing from start-up or fast
    /// tests, the process named by its interpreter, pytest's status.
    @Test(.tags(.timed)) func pytestRunGetsOneReportPerSlowTest() throws {
        let probe = try runCommand(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import pytest"], timeout: 60)
        guard probe.status == 0 else { try Test.cancel("pytest is not importable by python3 (scripts/setup installs it)") }
        let (result, written) = try wrappedPytest(Self.pytestSuite, file: "test_batch.py")
        #expect(result.status == 1, "pytest exits 1 with one failing test: \(result.stderr)")
        #expect(result.stdout.contains("1 failed, 9 passed"), "\(result.stdout)")
        #expect(written.allSatisfy { $0.phase == "batch" })
        #expect(written.allSatisfy { $0.processPath.contains("python") }, "\(written.map(\.processPath))")
        #expect(written.count == 3, "\(written.map { ($0.reason, $0.functions.prefix(3)) })")
        let sleeps = written.filter { $0.functions.contains("test_sleepy") || $0.reason == "blocked" }
        #expect(sleeps.count == 1 && sleeps.allSatisfy { $0.reason == "blocked" })
        let locks = written.filter { ["lock", "deadlock"].contains($0.reason) }
        #expect(locks.count == 1)
        let version = try runCommand(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import sys; print(sys.version_info[1] if sys.version_info[0] == 3 else 0)"])
        guard let minor = Int(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), (11...13).contains(minor) else {
            print("pytestRunGetsOneReportPerSlowTest: python3 is not CPython 3.11–3.13; test names not asserted")
            return
        }
        #expect(written.contains { $0.files.contains { $0.hasSuffix(".py") } }, "no Python frames in the reports")
        // Each slow test is reported exactly once, by its own name, with its reason (issue 13);
        // never a fast test.
        let all = "\(written.map { ($0.reason, $0.functions.prefix(6)) })"
        #expect(written.count == 3, "\(all)")
        // Each is timed over the whole test (5 s, 3 s, 4 s, less a sample interval or two): a
        // restart in the middle of a test would shorten it, and split it once the rest is long.
        for (test, reasons, seconds) in [
            ("test_sleepy", ["blocked"], 4.0), ("test_cpu", ["hang", "starved"], 2.3), ("test_deadlock", ["lock", "deadlock"], 3.2),
        ] {
            let named = written.filter { $0.functions.contains(test) }
            #expect(named.count == 1, "\(test): \(named.count) reports: \(all)")
            #expect(named.allSatisfy { $0.duration >= seconds }, "\(test): \(named.map(\.duration)) s")
            #expect(named.allSatisfy { reasons.contains($0.reason) }, "\(test): \(named.map(\.reason))")
        }
        #expect(!written.contains { $0.functions.contains { $0.hasPrefix("test_fast") } }, "a fast test was reported: \(all)")
    }
}
