import Foundation
import Testing

@testable import StallCapture
@testable import StallReports

@testable import StallSymbols
#if canImport(Glibc)
import Glibc
#endif

/// `stallagent dump --pid` of real CPython processes: the Python functions appear, in order,
/// with their lines, spliced above the `_PyEval_EvalFrameDefault` that runs them, in a stack
/// that still reaches `_start`; the target is left running and untraced.
@Suite(.serialized) struct PythonDumpTests {
    typealias P = PythonInterpreters

    static let pySpy: String? = ["/root/.pyenv/versions/3.11.7/bin/py-spy", "/usr/local/bin/py-spy", "/usr/bin/py-spy"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test(.enabled(if: P.has(P.pyenv311), P.missing(P.pyenv311))) func pyenv311() throws { try check(P.pyenv311) }
    @Test(.enabled(if: P.has(P.pyenv312), P.missing(P.pyenv312))) func pyenv312() throws { try check(P.pyenv312) }
    @Test(.enabled(if: P.has(P.pyenv313), P.missing(P.pyenv313))) func pyenv313() throws { try check(P.pyenv313) }
    @Test(.enabled(if: P.has(P.debian311), P.missing(P.debian311))) func debian311() throws { try check(P.debian311) }

    func check(_ python: String) throws {
        let script = try P.script("nested.py", P.nested)
        defer { try? FileManager.default.removeItem(atPath: (script as NSString).deletingLastPathComponent) }
        // Blocked in time.sleep: read without a stop.
        try dump(python, script, mode: "sleep", innerLines: [5], method: .withoutStop)
        // On CPU: stopped only for the copy; the loop is lines 7–8.
        try dump(python, script, mode: "cpu", innerLines: [7, 8], method: .ptraceStop)
    }

    func dump(_ python: String, _ script: String, mode: String, innerLines: Set<Int>, method: ThreadSnapshot.Method) throws {
        let target = try FixtureProcess([script, mode], executable: URL(fileURLWithPath: python))
        defer { target.stop() }
        // "ready" is printed just before outer() is called: wait until the stack is there.
        var frames: [SymbolizedFrame] = []
        var text = ""
        for _ in 0..<50 {
            let json = try runCommand(FixtureProcess.stallagentURL, ["dump", "--pid", "\(target.pid)", "--json"])
            #expect(json.status == 0, "dump failed: \(json.stderr)")
            let dump = try JSONDecoder().decode(ProcessDump.self, from: Data(json.stdout.utf8))
            frames = dump.threads.first?.frames ?? []
            let inner = frames.first { $0.isPython && $0.function == "inner" }
            if let inner, innerLines.contains(inner.line ?? 0), dump.threads.first?.captureMethod == method {
                text = try runCommand(FixtureProcess.stallagentURL, ["dump", "--pid", "\(target.pid)"]).stdout
                break
            }
            usleep(50_000)
        }
        let python = frames.filter(\.isPython)
        let summary = frames.map { ($0.function ?? "?") + ($0.isPython ? ":\($0.line ?? 0)" : "") }
        #expect(python.map(\.function) == ["inner", "middle", "outer", "<module>"], "\(summary)")
        #expect(python.count == 4)
        guard python.count == 4 else { return }
        #expect(innerLines.contains(python[0].line ?? 0), "\(summary)")
        #expect(python[1].line == 11)
        #expect(python[2].line == 14)
        #expect(python[3].line == 17)
        #expect(python.allSatisfy { $0.file == script })
        // Spliced just above the evaluator that runs them, inside native frames down to _start.
        let lastIndex = frames.lastIndex { $0.isPython }
        let last = try #require(lastIndex)
        #expect(frames[last + 1].function == "_PyEval_EvalFrameDefault", "\(summary)")
        #expect(frames.last?.function == "_start", "\(summary)")
        if mode == "sleep" {
            #expect(frames.first?.function?.contains("nanosleep") == true, "\(summary)")
            // py-spy, as a reference only: the same functions and lines for the sleeping thread.
            if let pySpy = Self.pySpy {
                let reference = try runCommand(URL(fileURLWithPath: pySpy), ["dump", "--pid", "\(target.pid)"])
                let theirs = reference.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { $0.contains("(nested.py:") }
                let ours = python.map { "\($0.function ?? "?") (nested.py:\($0.line ?? 0))" }
                #expect(theirs == ours, "py-spy: \(reference.stdout) \(reference.stderr)")
            } else {
                print("PythonDumpTests: py-spy not installed (pip install py-spy): no reference comparison")
            }
        }
        #expect(text.contains("inner (nested.py:"), "\(text)")
        #expect(text.contains("middle (nested.py:11)"), "\(text)")
        let status = target.procStatus
        #expect(status?.tracer == 0)
        #expect(status?.state != "t" && status?.state != "T")
    }

    /// An interpreter whose layout is not known (3.10 has no `Py_Version` and another frame
    /// design): native frames down to `_start`, and a note saying why there are no others.
    @Test(.enabled(if: P.has(P.pyenv310), P.missing(P.pyenv310))) func unknownVersionGivesNativeFramesAndANote() throws {
        let script = try P.script("nested.py", P.nested)
        let target = try FixtureProcess([script, "sleep"], executable: URL(fileURLWithPath: P.pyenv310))
        defer { target.stop() }
        try #require(KernelState.waitUntilBlocked(target.pid), "never in time.sleep")
        let result = try runCommand(FixtureProcess.stallagentURL, ["dump", "--pid", "\(target.pid)", "--json"])
        #expect(result.status == 0)
        let dump = try JSONDecoder().decode(ProcessDump.self, from: Data(result.stdout.utf8))
        let thread = try #require(dump.threads.first)
        #expect(thread.frames.allSatisfy { !$0.isPython })
        #expect(thread.frames.last?.function == "_start")
        #expect(thread.interpreterNote?.contains("older than 3.11") == true, "\(thread.interpreterNote ?? "no note")")
        #expect(target.procStatus?.tracer == 0)
    }

    /// The same process without Python frames: the flag turns them off, and nothing else moves.
    @Test(.enabled(if: P.has(P.pyenv312), P.missing(P.pyenv312))) func noPythonFramesFlag() throws {
        let script = try P.script("nested.py", P.nested)
        let target = try FixtureProcess([script, "sleep"], executable: URL(fileURLWithPath: P.pyenv312))
        defer { target.stop() }
        try #require(KernelState.waitUntilBlocked(target.pid), "never in time.sleep")
        let result = try runCommand(FixtureProcess.stallagentURL, ["dump", "--pid", "\(target.pid)", "--no-python-frames"])
        #expect(result.status == 0)
        #expect(!result.stdout.contains("nested.py"))
        #expect(result.stdout.contains("_PyEval_EvalFrameDefault"))
    }
}
