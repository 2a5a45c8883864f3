/// The fields of `/proc/PID/status` the agent uses.
public struct ProcStatus: Equatable, Sendable {
    public var name: String
    public var state: Character
    public var tgid: Int32
    public var pid: Int32
    public var ppid: Int32
    /// Non-zero when another tracer (gdb, strace, another agent) is attached.
    public var tracerPid: Int32
    public var realUid: UInt32
    public var threads: Int
    /// Kernel threads have no user memory, so no VmSize line.
    public var hasUserMemory: Bool

    public static func parse(_ text: String) -> ProcStatus? {
        var fields: [Substring: Substring] = [:]
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].drop(while: { $0 == " " || $0 == "\t" })
            fields[line[..<colon]] = value
        }
        func int(_ key: Substring) -> Int32? {
            fields[key].flatMap { Int32($0.prefix(while: { $0 != " " && $0 != "\t" })) }
        }
        guard let name = fields["Name"], let state = fields["State"]?.first,
            let tgid = int("Tgid"), let pid = int("Pid")
        else { return nil }
        let uid = fields["Uid"].flatMap { UInt32($0.prefix(while: { $0 != "\t" && $0 != " " })) } ?? 0
        return ProcStatus(
            name: String(name), state: state, tgid: tgid, pid: pid, ppid: int("PPid") ?? 0,
            tracerPid: int("TracerPid") ?? 0, realUid: uid,
            threads: Int(int("Threads") ?? 1), hasUserMemory: fields["VmSize"] != nil)
    }
}
