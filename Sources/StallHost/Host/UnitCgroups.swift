import Foundation

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// Finds a systemd unit's processes from its control group, without D-Bus: a `DynamicUser=`
/// service cannot call `systemctl show` over dbus-daemon (Debian's and Ubuntu's default bus),
/// but it can read the cgroup tree. systemd names a unit's cgroup after the unit
/// (`…/system.slice/nginx.service`) on the unified hierarchy and, on hybrid and legacy hosts,
/// on its own `name=systemd` hierarchy too; either holds the unit's processes.
public final class UnitCgroups {
    /// Hierarchy mount points to search, cgroup2 first.
    public let hierarchies: [String]
    /// Where a unit was last found: a restarted unit gets a cgroup of the same path.
    private var lastFound: [String: String] = [:]

    /// `STALLAGENT_CGROUP_ROOT` (colon-separated) replaces the mounted hierarchies, for hosts
    /// that mount them elsewhere and for tests.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if let override = environment["STALLAGENT_CGROUP_ROOT"] {
            hierarchies = override.split(separator: ":").map(String.init).filter(Self.isDirectory)
        } else {
            hierarchies = Self.mountedHierarchies((try? ProcFS.readText("/proc/self/mountinfo")) ?? "")
        }
    }

    /// cgroup2 mounts, then cgroup v1 mounts of the `name=systemd` hierarchy, from mountinfo
    /// (`ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPEROPTIONS`).
    static func mountedHierarchies(_ mountinfo: String) -> [String] {
        var unified: [String] = []
        var named: [String] = []
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 6, let dash = fields[5...].firstIndex(of: "-"), dash + 1 < fields.count else { continue }
            let mountPoint = unescape(fields[4])
            let type = fields[dash + 1]
            let superOptions = dash + 3 < fields.count ? fields[dash + 3].split(separator: ",") : []
            if type == "cgroup2" {
                unified.append(mountPoint)
            } else if type == "cgroup", superOptions.contains("name=systemd") {
                named.append(mountPoint)
            }
        }
        return unified + named
    }

    /// mountinfo writes space, tab, newline and backslash as `\ooo`.
    static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let byte = utf8.first {
            if byte == UInt8(ascii: "\\"), utf8.count >= 4,
                let value = UInt8(String(decoding: utf8.dropFirst().prefix(3), as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(4)
            } else {
                bytes.append(byte)
                utf8 = utf8.dropFirst()
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The unit's cgroup directory, or nil when it has none (not running, or no hierarchy).
    public func locate(_ unit: String) -> String? {
        if let path = lastFound[unit], Self.isDirectory(path) { return path }
        for root in hierarchies {
            if let path = Self.search(root: root, for: unit) {
                lastFound[unit] = path
                return path
            }
        }
        return nil
    }

    /// Breadth first, so a system unit is found before anything nested deeper. Units sit in
    /// slices; a `.service` or `.scope` directory's children are its own delegated cgroups
    /// (a user manager's units among them), not system units, so they are not entered.
    static func search(root: String, for unit: String, maxDepth: Int = 8, maxDirectories: Int = 20_000) -> String? {
        var level = [root]
        var visited = 0
        for _ in 0...maxDepth {
            var next: [String] = []
            for directory in level {
                guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
                for name in names {
                    let path = directory + "/" + name
                    guard isDirectory(path) else { continue }
                    if name == unit { return path }
                    visited += 1
                    if visited > maxDirectories { return nil }
                    if !name.hasSuffix(".service") && !name.hasSuffix(".scope") { next.append(path) }
                }
            }
            if next.isEmpty { return nil }
            level = next
        }
        return nil
    }

    /// Every process in the cgroup and its sub-cgroups (a delegated service keeps workers in
    /// cgroups of its own below the unit's).
    public static func processes(in cgroup: String) -> [Int32] {
        var result: [Int32] = []
        var pending = [(cgroup, 0)]
        while let (directory, depth) = pending.popLast() {
            if let text = try? ProcFS.readText(directory + "/cgroup.procs") {
                result += text.split(separator: "\n").compactMap { Int32($0) }
            }
            guard depth < 8, let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
            for name in names where isDirectory(directory + "/" + name) { pending.append((directory + "/" + name, depth + 1)) }
        }
        return result
    }

    /// What a process of the cgroup needs for the choice of the main one.
    public struct Member: Equatable, Sendable {
        public var pid: Int32
        public var ppid: Int32
        public var startTicks: UInt64

        public init(pid: Int32, ppid: Int32, startTicks: UInt64) {
            self.pid = pid
            self.ppid = ppid
            self.startTicks = startTicks
        }
    }

    /// The stand-in for systemd's MainPID: the oldest process whose parent is outside the
    /// cgroup. A forking server's master has been re-parented to PID 1 (or a subreaper)
    /// while its workers are its children; helpers a service spawns are children too.
    public static func mainProcess(of members: [Member]) -> Int32? {
        let pids = Set(members.map(\.pid))
        return members.filter { !pids.contains($0.ppid) }
            .min { ($0.startTicks, $0.pid) < ($1.startTicks, $1.pid) }?.pid
    }

    /// Live (not zombie) processes of the cgroup with their parent and start time.
    public static func members(of cgroup: String) -> [Member] {
        processes(in: cgroup).compactMap { pid in
            guard let text = try? ProcFS.readText("/proc/\(pid)/stat", pid: pid), let stat = ProcThreadStat.parse(text),
                stat.state != "Z", stat.state != "X"
            else { return nil }
            return Member(pid: pid, ppid: stat.ppid, startTicks: stat.startTicks)
        }
    }

    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}
