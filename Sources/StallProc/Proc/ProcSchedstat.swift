/// `/proc/PID/task/TID/schedstat`: nanoseconds on CPU, nanoseconds waiting on a run queue,
/// and the number of time slices. Deltas between probes split "running" into real work and
/// CPU starvation.
public struct ProcSchedstat: Equatable, Sendable {
    public var cpuNanos: UInt64
    public var runQueueNanos: UInt64
    public var timeslices: UInt64

    public static func parse(_ text: Substring) -> ProcSchedstat? {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard words.count >= 3, let cpu = UInt64(words[0]), let wait = UInt64(words[1]),
            let slices = UInt64(words[2])
        else { return nil }
        return ProcSchedstat(cpuNanos: cpu, runQueueNanos: wait, timeslices: slices)
    }

    public static func parse(_ text: String) -> ProcSchedstat? { parse(text[...]) }
}
