// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "stallagent",
    products: [
        .executable(name: "stallagent", targets: ["stallagent"]),
        .executable(name: "stall-fixtures", targets: ["stall-fixtures"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
    ],
    targets: [
        // ptrace is variadic in glibc and waitpid's status macros are function-like:
        // both need compiled C. Only ptrace, waitpid, process_vm_readv and the guard that keeps
        // a capture window short: its importers are the code that stops threads.
        .target(name: "CPtrace"),
        // The other POSIX/Linux calls Swift cannot make directly: spawning and reaping,
        // AF_UNIX datagrams, sealed memfds, perf counters, fstatfs, the SIGBUS guard.
        .target(name: "CPosix"),
        .target(name: "CDemangle", linkerSettings: [.linkedLibrary("stdc++")]),
        // libdebuginfod, loaded at run time (optional, like libdw does).
        .target(name: "CDebuginfod"),
        .systemLibrary(
            name: "CLibunwind", pkgConfig: "libunwind-generic",
            providers: [.apt(["libunwind-dev", "liblzma-dev"])]),
        .systemLibrary(
            name: "CLibelf", pkgConfig: "libelf",
            providers: [.apt(["libelf-dev"])]),
        .systemLibrary(
            name: "CLibdw", pkgConfig: "libdw",
            providers: [.apt(["libdw-dev"])]),
        .systemLibrary(
            name: "CLzma", pkgConfig: "liblzma",
            providers: [.apt(["liblzma-dev"])]),
        // zlib: pprof files are gzipped protobuf.
        .systemLibrary(
            name: "CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),
        // Probe classification, episodes, heaviest stack, annealing: pure Swift, no system or
        // C module, driven by a clock it is given. The compiler keeps it free of ptrace and files.
        .target(
            name: "StallDetection",
            dependencies: [
                .product(name: "DequeModule", package: "swift-collections")
            ]),
        // What /proc and the kernel's counters say about a process without stopping it; the
        // agent's error type and clock. Below everything that stops, reports or watches.
        .target(
            name: "StallProc",
            dependencies: ["StallDetection", "CPosix"]),
        // Naming addresses: ELF images and their symbol tables, DWARF lines and inlined frames,
        // separate debug files, debuginfod, MiniDebugInfo, demangling, perf maps. Reads files and
        // (for the vDSO) memory; never stops a thread.
        .target(
            name: "StallSymbols",
            dependencies: ["StallProc", "CPosix", "CLibelf", "CLibdw", "CLzma", "CDemangle", "CDebuginfod"]),
        // Stopping a thread, copying its registers and stack, unwinding, script frames: the
        // only importer of CPtrace, so the compiler keeps every stop in this target.
        .target(
            name: "StallCapture",
            dependencies: ["StallProc", "StallSymbols", "CPtrace", "CPosix", "CLibunwind"]),
        // Reports on disk (text, JSON, folded stacks), their names, retention and re-symbolization.
        .target(
            name: "StallReports",
            dependencies: ["StallDetection", "StallCapture", "StallSymbols"]),
        // Pictures of report directories (HTML, SVG flame graphs, speedscope, pprof): reads
        // report files and writes one file; never touches a process.
        .target(
            name: "StallViews",
            dependencies: [
                "StallDetection", "StallSymbols", "StallReports", "CZlib",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]),
        // The watch loop: probes, the detector, captures on its schedule, reports; settings.
        .target(
            name: "StallMonitoring",
            dependencies: [
                "StallDetection", "StallProc", "StallCapture", "StallSymbols", "StallReports", "CPosix",
            ]),
        // `stallagent -- COMMAND`: the command's life, exit status and CI outputs.
        .target(
            name: "StallWrapper",
            dependencies: ["StallDetection", "StallProc", "StallCapture", "StallReports", "StallMonitoring", "CPosix"]),
        // The service: config file, targets (pid files, units, cgroups), journal, metrics.
        .target(
            name: "StallHost",
            dependencies: [
                "StallDetection", "StallProc", "StallSymbols", "StallReports", "StallMonitoring", "CPosix",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Yams", package: "Yams"),
            ]),
        .executableTarget(
            name: "stallagent",
            dependencies: [
                "StallDetection", "StallProc", "StallCapture", "StallSymbols", "StallReports", "StallMonitoring", "StallWrapper",
                "StallHost",
                "StallViews",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // The performance figures behind the goals (scripts/bench); not part of the product.
        .executableTarget(
            name: "stallagent-bench",
            dependencies: [
                "StallDetection", "StallProc", "StallCapture", "StallSymbols", "StallReports", "StallMonitoring", "StallWrapper",
                "StallHost",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // Small C programs whose main thread stalls in known ways; tests and the demo use them.
        .executableTarget(
            name: "stall-fixtures",
            cSettings: [.unsafeFlags(["-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline"])],
            linkerSettings: [.linkedLibrary("pthread")]),
        // The receiving ends of sd_notify and the journal for the tests (cmsg macros need C).
        .target(name: "CTestSupport", dependencies: ["CPosix"], path: "Tests/CTestSupport"),
        // Test support for every test target: the detector driven on a synthetic probe grid and a
        // clock that moves when told. It depends on the pure core alone.
        .target(name: "DetectionTestSupport", dependencies: ["StallDetection"], path: "Tests/DetectionTestSupport"),
        // Report scaffolding for every test target that reads a report: stalls driven through the
        // real detector and a report context whose resolver fills in what a symbolizer would.
        .target(
            name: "ReportTestSupport",
            dependencies: ["StallDetection", "StallSymbols", "StallReports", "DetectionTestSupport"],
            path: "Tests/ReportTestSupport"),
        // The pure detection core's tests: they can import StallDetection and its support, nothing
        // that reads a clock, a file or a process.
        .testTarget(name: "StallDetectionTests", dependencies: ["StallDetection", "DetectionTestSupport"]),
        // One test target per library target, each depending on its target and what that target
        // depends on (and test support): pure and fast, no process is started.
        .testTarget(name: "StallProcTests", dependencies: ["StallProc"]),
        .testTarget(name: "StallCaptureTests", dependencies: ["StallCapture", "StallProc", "StallSymbols"]),
        .testTarget(
            name: "StallReportsTests",
            dependencies: [
                "StallReports", "StallDetection", "StallProc", "StallCapture", "StallSymbols", "DetectionTestSupport",
                "ReportTestSupport",
            ]),
        .testTarget(
            name: "StallViewsTests",
            dependencies: ["StallViews", "StallReports", "StallDetection", "ReportTestSupport"]),
        // The roles and whole stalls on scripted fakes (Support/ScriptedThread, ScriptedProcess).
        .testTarget(
            name: "StallMonitoringTests",
            dependencies: [
                "StallMonitoring", "StallDetection", "StallProc", "StallCapture", "StallSymbols", "StallReports",
                "ReportTestSupport", "CPosix",
            ]),
        // Config files, settings precedence, units' cgroups, journal fields, retention.
        .testTarget(
            name: "StallHostTests",
            dependencies: [
                "StallHost", "StallMonitoring", "StallWrapper", "StallReports", "StallCapture", "StallSymbols", "StallProc",
            ]),
        // Against real processes under real ptrace (fixtures, the agent binary, real programs).
        .testTarget(
            name: "StallAgentKitTests",
            dependencies: [
                "StallDetection", "StallProc", "StallCapture", "StallSymbols", "StallReports", "StallMonitoring", "StallWrapper",
                "StallHost", "StallViews",
                "CPosix", "CTestSupport", "DetectionTestSupport", "ReportTestSupport", "stall-fixtures",
            ],
            // Sources of programs the tests compile themselves (C, C++, Swift, Rust).
            exclude: ["Symbols/Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)
