/// Whether a process's cgroup is frozen (`systemctl freeze`, `docker pause`, the v1 freezer):
/// its threads then sit in `D` and look like disk I/O, but nothing of the process is working,
/// so the time counts as stopped, like SIGSTOP's, not as an `io` stall (and `--kill-after`
/// must not fire the moment it thaws).
public enum CgroupFreezer {
    /// Reads `/proc/PID/cgroup` and the freezer state of the cgroups it names: v2's
    /// `cgroup.events` ("frozen 1", set for a cgroup frozen itself or by an ancestor) and v1's
    /// `freezer.state` (FROZEN or FREEZING, the effective state).
    public static func isFrozen(pid: Int32, root: String = "/sys/fs/cgroup") -> Bool {
        guard let text = try? ProcFS.readText("/proc/\(pid)/cgroup", pid: pid) else { return false }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, fields[2].hasPrefix("/"), !fields[2].contains("..") else { continue }
            let path = String(fields[2])
            if fields[0] == "0", fields[1].isEmpty {
                for mount in [root, root + "/unified"] {
                    if let events = read(mount + path + "/cgroup.events"), events.split(separator: "\n").contains("frozen 1") {
                        return true
                    }
                }
            } else if fields[1].split(separator: ",").contains("freezer") {
                if let state = read(root + "/freezer" + path + "/freezer.state"), state.hasPrefix("FROZEN") || state.hasPrefix("FREEZING") {
                    return true
                }
            }
        }
        return false
    }

    private static func read(_ path: String) -> String? {
        try? ProcFS.readText(path, pid: 0)
    }
}
