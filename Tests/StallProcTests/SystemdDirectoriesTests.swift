import Testing
@testable import StallProc

/// systemd's directory variables are colon-separated lists in the unit's order.
@Suite struct SystemdDirectoriesTests {
    @Test func twoStateDirectoriesAsTheShippedUnitsAskForThem() {
        let directories = SystemdDirectories(environment: [
            "STATE_DIRECTORY": "/var/lib/stallagent:/var/lib/stallagent/metrics",
            "CACHE_DIRECTORY": "/var/cache/stallagent",
            "LOGS_DIRECTORY": "/var/log/a:/var/log/b:/var/log/c",
        ])
        #expect(directories.state == ["/var/lib/stallagent", "/var/lib/stallagent/metrics"])
        #expect(directories.stateDirectory == "/var/lib/stallagent")
        #expect(directories.cache == ["/var/cache/stallagent"])
        #expect(directories.logs == ["/var/log/a", "/var/log/b", "/var/log/c"])
    }

    @Test func unsetEmptyAndStrayColonsNameNothing() {
        #expect(SystemdDirectories(environment: [:]).stateDirectory == nil)
        #expect(SystemdDirectories(environment: ["STATE_DIRECTORY": ""]).stateDirectory == nil)
        #expect(SystemdDirectories.list("::/var/lib/x/::/var/lib/y:") == ["/var/lib/x", "/var/lib/y"])
        #expect(SystemdDirectories.list("/") == ["/"])
    }
}
