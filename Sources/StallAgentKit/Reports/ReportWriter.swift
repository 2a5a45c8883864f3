import Synchronization
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Writes each report as `<stem>.txt`, `<stem>.json` and optionally `<stem>.folded` in one
/// directory. A reader never sees a partial file: every file is written to a temporary name in
/// the same directory, synced, and renamed over the final name, so an annealing rewrite of the
/// same stall replaces the previous revision whole. All files are staged before any is renamed,
/// so a full disk leaves the previous revision (or nothing) in place, never a mix.
public final class ReportWriter: Sendable {
    public let directory: String
    /// The files of each stall's last revision, keyed by pid and stall id.
    private let written = Mutex<[String: ReportPaths]>([:])

    /// Creates `directory` (0755, parents too) if it is missing. Refuses a symbolic link (a
    /// report directory another user can redirect is a way to overwrite their choice of file),
    /// anything that is not a directory, and a directory this process cannot create files in.
    public init(directory: String) throws {
        let path = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        self.directory = path
        func refuse(_ reason: String) -> StallAgentError { .reportDirectory(path: path, reason: reason) }
        var info = stat()
        if lstat(path, &info) != 0 {
            guard errno == ENOENT else { throw refuse(Self.errorText(errno)) }
            try Self.makeDirectories(path, refuse: refuse)
            guard lstat(path, &info) == 0 else { throw refuse(Self.errorText(errno)) }
        }
        if info.st_mode & S_IFMT == S_IFLNK { throw refuse("is a symbolic link; give the directory it points to") }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw refuse("exists and is not a directory") }
        // access(W_OK) says yes to root on a read-only file system and ignores ACL subtleties;
        // creating a file is the only reliable test.
        let probe = path + "/.stallagent-probe-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw refuse("not writable: \(Self.errorText(errno))") }
        close(fd)
        unlink(probe)
    }

    /// Tells this agent process's reports from another's: two agents on one service (or an
    /// agent restarted within the second) number their stalls from 1 alike.
    public static let processInstance = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        .leftPadded(to: 8)

    /// `<name>_<pid>_<yyyyMMdd-HHmmss>_<reason>_<id>-<instance>` from the stall's start time
    /// (local), so every revision of one stall maps to the same files and names sort by time
    /// per process.
    public func fileStem(for r: StallReport) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        let name = Self.sanitize(r.process.name, fallback: "process")
        let reason = Self.sanitize(r.reason.name, fallback: "stall")
        return "\(name)_\(r.process.pid)_\(formatter.string(from: r.startTime))_\(reason)_\(r.id)-\(Self.processInstance)"
    }

    /// `stem` overrides the name derived from the report (a rewrite of an existing file).
    /// Each format is rendered on its own: one that cannot be rendered is left out (and named
    /// in the thrown `ReportWriteError.formatsFailed` after the others are written), so a
    /// report never fails as a whole. A failure to store (a full disk) writes nothing.
    public func write(_ r: StallReport, folded: String?, stem: String? = nil) throws -> ReportPaths {
        let base = directory + "/" + (stem ?? fileStem(for: r))
        let paths = ReportPaths(text: base + ".txt", json: base + ".json", folded: folded.map { _ in base + ".folded" })
        var failed: [String] = []
        // The text goes last: whoever sees it (the summary line points there) finds the rest.
        var files: [(path: String, bytes: Data)] = []
        do {
            files.append((paths.json, try StallReportJSONRenderer.render(r)))
        } catch {
            failed.append("JSON: \(ReportWriteError.describe(error))")
        }
        if let folded, let path = paths.folded { files.append((path, Data(folded.utf8))) }
        files.append((paths.text, Data(StallReportTextRenderer.render(r).utf8)))

        var staged: [String] = []
        do {
            for file in files { staged.append(try AtomicFile.stage(file.bytes, nextTo: file.path, mode: Self.fileMode)) }
            for (temp, file) in zip(staged, files) where rename(temp, file.path) != 0 {
                throw StallAgentError.system(operation: "rename \(temp) to \(file.path)", errno: errno)
            }
        } catch {
            for temp in staged { unlink(temp) }
            throw error
        }
        // The name carries the reason: when it changes (hang → died, lock → deadlock) the
        // earlier revision must go, or it would stay behind as a stale "ongoing" report.
        let key = "\(r.process.pid)-\(r.id)"
        if let previous = written.withLock({ $0.updateValue(paths, forKey: key) }), previous.text != paths.text {
            for path in [previous.text, previous.json, previous.folded].compactMap({ $0 }) { unlink(path) }
        }
        syncDirectory()
        if !failed.isEmpty { throw ReportWriteError.formatsFailed(paths: paths, failures: failed) }
        return paths
    }

    /// Report files: readable by the agent's user and group only (they hold command lines,
    /// paths and addresses of the watched process).
    public static let fileMode: mode_t = 0o640

    /// Makes the renames durable; a failure here loses nothing already visible, so it is ignored.
    private func syncDirectory() {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    private static func makeDirectories(_ path: String, refuse: (String) -> StallAgentError) throws {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o750) != 0 && errno != EEXIST {
                throw refuse("cannot create \(prefix): \(errorText(errno))")
            }
        }
    }

    /// Keeps `[A-Za-z0-9._-]` so a process name cannot add directories, spaces or control
    /// characters to a file name.
    static func sanitize(_ text: String, fallback: String, alsoAllowed: String = "") -> String {
        let allowed = Set(("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-" + alsoAllowed).unicodeScalars)
        let cleaned = String(String.UnicodeScalarView(text.unicodeScalars.map { allowed.contains($0) ? $0 : "_" }))
        let trimmed = String(cleaned.prefix(64))
        return trimmed.isEmpty || trimmed.allSatisfy({ $0 == "." }) ? fallback : trimmed
    }

    private static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

/// A report written without some of its formats.
public enum ReportWriteError: Error, CustomStringConvertible {
    case formatsFailed(paths: ReportPaths, failures: [String])

    public var description: String {
        switch self {
        case .formatsFailed(let paths, let failures):
            return "\(failures.joined(separator: "; ")) (the other formats were written: \(paths.text))"
        }
    }

    /// The error without the data: Foundation's encoding errors print the whole value they
    /// failed on (a report with its command line and every frame), which must not reach a log.
    static func describe(_ error: any Error) -> String {
        switch error {
        case EncodingError.invalidValue(_, let context):
            return "cannot encode the value at \(context.codingPath.count) levels deep: \(context.debugDescription.prefix(200))"
        default:
            return String(String(describing: error).prefix(300))
        }
    }
}

private extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
