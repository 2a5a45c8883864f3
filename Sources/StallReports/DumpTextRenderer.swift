/// The human-readable form of `stallagent dump`.
import Foundation
import StallCapture

public enum DumpTextRenderer {
    public static func render(_ dump: ProcessDump) -> String {
        var out: [String] = []
        out.append("Process:         \(dump.name) [\(dump.pid)]")
        if let path = dump.path { out.append("Path:            \(path)") }
        if let id = dump.buildId { out.append("Build ID:        \(id)") }
        out.append("Date/Time:       \(dump.time)")
        for (index, thread) in dump.threads.enumerated() {
            out.append("")
            let role = thread.tid == dump.pid ? "main" : thread.name
            out.append("Thread \(index) (\(role)) tid \(thread.tid) \"\(thread.name)\": \(thread.detail) [state \(thread.state)]")
            if let owner = thread.lockOwner {
                out.append("  lock held by thread \(owner.tid)" + (owner.name.map { " \"\($0)\"" } ?? ""))
            }
            if let method = thread.captureMethod {
                switch method {
                case .withoutStop: out.append("  captured without stopping the thread")
                case .perfSample: out.append("  sampled by the kernel (perf_event), without stopping the thread")
                case .ptraceStop:
                    let pause = thread.pauseMicroseconds.map { String(format: "%.0f", $0) } ?? "?"
                    out.append("  captured with a ptrace stop; thread paused \(pause) µs")
                }
            }
            if let error = thread.error { out.append("  no stack: \(error)") }
            out.append(contentsOf: StackTextRenderer.lines(thread.frames))
            if let end = thread.unwindEnd, end != .complete {
                out.append("  (stack incomplete: \(UnwindEndText.describe(end)))")
            }
            if let note = thread.interpreterNote { out.append("  (script frames: \(note))") }
        }
        return TerminalSanitizer.lines(out).joined(separator: "\n") + "\n"
    }
}

enum UnwindEndText {
    static func describe(_ end: UnwindEnd) -> String {
        switch end {
        case .complete: return "complete"
        case .truncatedAtLimit: return "frame limit reached"
        case .missingRegister:
            return "a register the unwind needs was not captured (the thread was read without a stop) and no frame record on the stack fits unambiguously"
        case .outsideCopiedStack: return "the stack is deeper than the copied part (raise --max-stack)"
        case .noUnwindInfo: return "no unwind information for a frame (JIT or stripped of .eh_frame)"
        case .badFrame: return "unwinding reached an invalid frame"
        case .notCode: return "the next return address does not point into code"
        case .stackChanged: return "the stack changed while it was copied"
        }
    }
}
