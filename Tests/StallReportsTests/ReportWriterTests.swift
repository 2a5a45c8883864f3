import ReportTestSupport
import Foundation
import Testing

@testable import StallProc
@testable import StallReports

#if canImport(Glibc)
import Glibc
#endif

@Suite("ReportWriter")
struct ReportWriterTests {
    private typealias F = ReportFixtures

    private func contents(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    private func report(revision: Int = 0, name: String = "stall-fixtures") -> StallReport {
        var snapshot = F.hangEnded()
        snapshot.revision = revision
        var context = F.context()
        context.process.name = name
        return StallReport(snapshot: snapshot, context: context)
    }

    @Test func createsTheDirectoryAndWritesAllThreeFiles() throws {
        let base = F.temporaryDirectory()
        let directory = base + "/nested/reports"
        defer { try? FileManager.default.removeItem(atPath: base) }
        let writer = try ReportWriter(directory: directory)
        var info = stat()
        #expect(stat(directory, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR)
        let r = report()
        let paths = try writer.write(r, folded: "main;work 3\n")
        let stem = writer.fileStem(for: r)
        #expect(paths.text == directory + "/" + stem + ".txt")
        #expect(paths.json == directory + "/" + stem + ".json")
        #expect(paths.folded == directory + "/" + stem + ".folded")
        #expect(try contents(directory) == [stem + ".folded", stem + ".json", stem + ".txt"])
        #expect(try String(contentsOfFile: paths.text, encoding: .utf8) == StallReportTextRenderer.render(r))
        #expect(try Data(contentsOf: URL(fileURLWithPath: paths.json)) == StallReportJSONRenderer.render(r))
        #expect(try String(contentsOfFile: paths.folded!, encoding: .utf8) == "main;work 3\n")

        let noFolded = try writer.write(report(), folded: nil)
        #expect(noFolded.folded == nil)
    }

    @Test func fileStemCarriesNamePidTimeReasonAndId() throws {
        let directory = F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let writer = try ReportWriter(directory: directory)
        let stem = writer.fileStem(for: report(name: "my app/../x;y"))
        #expect(stem.wholeMatch(of: #/my_app_.._x_y_1234_\d{8}-\d{6}_hang_1-[0-9a-f]{8}/#) != nil, "\(stem)")
        #expect(stem.hasSuffix("-" + ReportWriter.processInstance))
        #expect(writer.fileStem(for: report(name: "")).hasPrefix("process_1234_"))
        #expect(writer.fileStem(for: report(name: "..")).hasPrefix("process_1234_"))
    }

    @Test func rewritingTheSameStallReplacesItsFiles() throws {
        let directory = F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let writer = try ReportWriter(directory: directory)
        let first = try writer.write(report(revision: 0), folded: "a 1\n")
        let second = try writer.write(report(revision: 2), folded: "a 2\n")
        #expect(first == second)
        #expect(try contents(directory).count == 3)
        #expect(try String(contentsOfFile: second.text, encoding: .utf8).contains("revision 2"))
        #expect(try String(contentsOfFile: second.folded!, encoding: .utf8) == "a 2\n")
    }

    /// A link another user could have placed (here owned by nobody) is refused.
    @Test func refusesASymlinkedDirectory() throws {
        let base = F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base + "/real", withIntermediateDirectories: true)
        #expect(symlink(base + "/real", base + "/link") == 0)
        #expect(lchown(base + "/link", 65534, 65534) == 0)
        #expect(
            throws: StallAgentError.reportDirectory(
                path: base + "/link", reason: base + "/link is a symbolic link someone else could have placed; give the directory it points to")
        ) {
            try ReportWriter(directory: base + "/link")
        }
        #expect(throws: StallAgentError.self) { try ReportWriter(directory: base + "/link/") }
    }

    /// systemd's DynamicUser= makes /var/lib/NAME a root-owned link to private/NAME in a
    /// directory only root writes: that link is followed (the shipped units depend on it).
    @Test func followsALinkOnlyRootOrThisUserCouldHavePlaced() throws {
        let base = F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base + "/private/stallagent", withIntermediateDirectories: true)
        chmod(base, 0o755)
        #expect(symlink("private/stallagent", base + "/stallagent") == 0)
        let writer = try ReportWriter(directory: base + "/stallagent/reports/nginx.service")
        _ = writer
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: base + "/private/stallagent/reports/nginx.service", isDirectory: &isDirectory) && isDirectory.boolValue)
        // The same link in a directory others can write is not trusted.
        chmod(base, 0o777)
        #expect(throws: StallAgentError.self) { try ReportWriter(directory: base + "/stallagent/other") }
        chmod(base, 0o755)
    }

    @Test func refusesAFileAsDirectory() throws {
        let base = F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: base + "/file", contents: Data("x".utf8)))
        #expect(throws: StallAgentError.reportDirectory(path: base + "/file", reason: base + "/file exists and is not a directory")) {
            try ReportWriter(directory: base + "/file")
        }
        // A file in the way of a parent to create.
        #expect(throws: StallAgentError.self) { try ReportWriter(directory: base + "/file/sub") }
    }

    @Test func aFailedRenameLeavesNoTemporaryFiles() throws {
        let directory = F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let writer = try ReportWriter(directory: directory)
        let r = report()
        // A non-empty directory where the JSON file should go: rename(2) cannot replace it, so
        // the report takes another name (issue 15: pre-created names must not suppress reports)
        // and no temporary file of the failed attempt is left.
        let blocker = directory + "/" + writer.fileStem(for: r) + ".json"
        try FileManager.default.createDirectory(atPath: blocker + "/x", withIntermediateDirectories: true)
        let paths = try writer.write(r, folded: "a 1\n")
        #expect(paths.json != blocker)
        #expect(try contents(directory).count == 4)
        #expect(try contents(directory).allSatisfy { !$0.hasPrefix(".") })
    }

    /// Disk full, for real: a 16 KiB tmpfs. Needs root (mount); elsewhere the rename-failure
    /// test above covers the clean-up path.
    @Test(.enabled(if: geteuid() == 0, "needs root (mount)")) func aFullDiskLeavesThePreviousRevisionIntact() throws {
        let directory = F.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard mount("tmpfs", directory, "tmpfs", 0, "size=16k,mode=0755") == 0 else {
            try Test.cancel("could not mount a 16 KiB tmpfs: \(String(cString: strerror(errno)))")
        }
        defer { umount2(directory, 0) }
        let writer = try ReportWriter(directory: directory)

        // First write does not fit at all: nothing may appear.
        let huge = String(repeating: "main;work;leaf 1\n", count: 4096)
        #expect(throws: StallAgentError.self) { try writer.write(report(revision: 0), folded: huge) }
        #expect(try contents(directory) == [])

        // A report that fits, then a rewrite that does not: the first stays as it was.
        let paths = try writer.write(report(revision: 0), folded: nil)
        let before = try contents(directory).map { try Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0)) }
        do {
            _ = try writer.write(report(revision: 1), folded: huge)
            Issue.record("expected the write to fail with ENOSPC")
        } catch let error as StallAgentError {
            guard case .system(_, let code) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(code == ENOSPC)
        }
        let names = try contents(directory)
        #expect(names == [(paths.json as NSString).lastPathComponent, (paths.text as NSString).lastPathComponent])
        #expect(try names.map { try Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0)) } == before)
    }

    @Test(.enabled(if: geteuid() == 0, "needs root (mount)")) func refusesAnUnwritableDirectory() throws {
        let directory = F.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Root ignores permission bits; a read-only mount is what refuses root.
        guard mount("tmpfs", directory, "tmpfs", UInt(MS_RDONLY), "size=16k,mode=0755") == 0 else {
            try Test.cancel("could not mount a read-only tmpfs: \(String(cString: strerror(errno)))")
        }
        defer { umount2(directory, 0) }
        #expect(throws: StallAgentError.reportDirectory(path: directory, reason: "not writable: Read-only file system")) {
            try ReportWriter(directory: directory)
        }
    }

    @Test(.enabled(if: geteuid() != 0, "runs only as a user (root writes through any mode)")) func refusesAnUnwritableDirectoryAsUser() throws {
        let directory = F.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer {
            chmod(directory, 0o755)
            try? FileManager.default.removeItem(atPath: directory)
        }
        chmod(directory, 0o555)
        #expect(throws: StallAgentError.self) { try ReportWriter(directory: directory) }
    }
}
