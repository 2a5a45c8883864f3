import Foundation
import Testing
@testable import StallHost

/// Finding a unit without D-Bus: hierarchies from mountinfo, the unit's cgroup by name, the
/// stand-in for MainPID.
@Suite struct UnitCgroupsTests {
    typealias Member = UnitCgroups.Member

    /// This host's layout: hybrid, v1 controllers, `name=systemd` and cgroup2 at `unified`.
    @Test func hybridHostGivesUnifiedThenNamedSystemd() {
        let mountinfo = """
            25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
            31 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
            32 31 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
            33 31 0:28 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,xattr,name=systemd
            36 31 0:31 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,cpu,cpuacct
            40 30 0:40 / /mnt/with\\040space rw,relatime - cgroup2 cgroup2 rw
            """
        #expect(UnitCgroups.mountedHierarchies(mountinfo) == ["/sys/fs/cgroup/unified", "/mnt/with space", "/sys/fs/cgroup/systemd"])
        #expect(UnitCgroups.mountedHierarchies("") == [])
    }

    /// nginx: the master (parent PID 1) and its workers (children of the master), listed
    /// workers first; a late helper started by systemd (ExecReload=) is younger.
    @Test func mainProcessIsTheOldestWhoseParentIsOutside() {
        let members = [
            Member(pid: 812, ppid: 700, startTicks: 1010),
            Member(pid: 813, ppid: 700, startTicks: 1010),
            Member(pid: 700, ppid: 1, startTicks: 1000),
            Member(pid: 950, ppid: 1, startTicks: 5000),
        ]
        #expect(UnitCgroups.mainProcess(of: members) == 700)
        // Same start tick: the lower pid.
        #expect(UnitCgroups.mainProcess(of: [Member(pid: 9, ppid: 1, startTicks: 5), Member(pid: 8, ppid: 1, startTicks: 5)]) == 8)
        #expect(UnitCgroups.mainProcess(of: []) == nil)
    }

    /// System units before anything deeper; a service's own sub-cgroups (a user manager's
    /// units) are not searched.
    @Test func unitCgroupIsFoundByNameInSlices() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("cg-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        for path in [
            "system.slice/system-getty.slice/getty@tty1.service", "system.slice/redis-server.service",
            "user.slice/user-1000.slice/user@1000.service/app.slice/dbus.service", "init.scope",
        ] {
            try FileManager.default.createDirectory(atPath: root + "/" + path, withIntermediateDirectories: true)
        }
        #expect(UnitCgroups.search(root: root, for: "redis-server.service") == root + "/system.slice/redis-server.service")
        #expect(UnitCgroups.search(root: root, for: "getty@tty1.service") == root + "/system.slice/system-getty.slice/getty@tty1.service")
        #expect(UnitCgroups.search(root: root, for: "dbus.service") == nil)
        #expect(UnitCgroups.search(root: root, for: "nginx.service") == nil)
        let cgroups = UnitCgroups(environment: ["STALLAGENT_CGROUP_ROOT": root + ":" + root + "/missing"])
        #expect(cgroups.hierarchies == [root])
        #expect(cgroups.locate("redis-server.service") == root + "/system.slice/redis-server.service")
    }

    @Test func unitSearchPathFollowsSystemd() {
        #expect(TargetResolver.unitSearchPath(nil).contains("/etc/systemd/system"))
        #expect(TargetResolver.unitSearchPath("/a:/b") == ["/a", "/b"])
        let appended = TargetResolver.unitSearchPath("/a:")
        #expect(appended.first == "/a" && appended.contains("/usr/lib/systemd/system"))
    }
}
