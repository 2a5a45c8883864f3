import Testing
@testable import StallHost

/// What a refused attach under systemd is explained with: the missing capabilities and the
/// agent's own unit.
@Suite struct ServiceCapabilitiesTests {
    @Test func missingCapabilitiesAndOwnUnit() {
        #expect(ServiceCapabilities.effectiveSet(status: "Name:\tx\nCapEff:\t0000000000080004\n") == 0x80004)
        #expect(ServiceCapabilities.missing(from: 0x80004) == [])
        #expect(ServiceCapabilities.missing(from: 0x80000) == ["CAP_DAC_READ_SEARCH"])
        #expect(ServiceCapabilities.missing(from: 0) == ["CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"])
        #expect(
            ServiceCapabilities.ownUnit(cgroup: "0::/system.slice/system-stallagent.slice/stallagent@nginx.service\n")
                == "stallagent@nginx.service")
        #expect(
            ServiceCapabilities.ownUnit(cgroup: "12:cpu,cpuacct:/\n1:name=systemd:/system.slice/stallagent.service\n0::/\n")
                == "stallagent.service")
        #expect(ServiceCapabilities.ownUnit(cgroup: "0::/user.slice\n") == nil)
        #expect(!ServiceCapabilities.isSystemdService([:]))
        #expect(ServiceCapabilities.isSystemdService(["INVOCATION_ID": "0f3c"]))
    }
}
