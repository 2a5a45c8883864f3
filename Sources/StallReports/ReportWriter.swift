import Synchronization
import Foundation

import StallProc
import StallSymbols
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
    /// The directory, opened once after resolving every component without following links:
    /// files are created and renamed relative to it, so swapping a component of the path for a
    /// link later redirects nothing.
    private let directoryFD: Int32
    /// The files of each stall's last revision, keyed by pid and stall id.
    private let written = Mutex<[String: ReportPaths]>([:])
    /// Stems taken instead of the usual name (something else was there), by the usual one.
    private let alternatives = Mutex<[String: String]>([:])

    /// Creates `directory` (0750, parents too) if it is missing. Refuses a symbolic link in any
    /// component and `..` (a report directory another user can redirect is a way to overwrite
    /// their choice of file), anything that is not a directory, and a directory this process
    /// cannot create files in. With `requireSafeOwner` (the agent's own report directories;
    /// not `symbolicate`, which rewrites a report where the user points it), the directory must
    /// also belong to this process's user and not be writable by group or others: whoever can
    /// write it can pre-empt report names or swap files under the agent.
    /// `createMissing` false: a component that is not there is refused rather than made (a
    /// metrics file's directory belongs to the collector that reads it).
    public init(directory: String, requireSafeOwner: Bool = true, createMissing: Bool = true) throws {
        let path = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        self.directory = path
        func refuse(_ reason: String) -> StallAgentError { .reportDirectory(path: path, reason: reason) }
        let fd = try Self.openDirectory(path, createMissing: createMissing, refuse: refuse)
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw refuse(Self.errorText(code))
        }
        if requireSafeOwner {
            if info.st_uid != geteuid() {
                close(fd)
                throw refuse("belongs to uid \(info.st_uid), not to this agent's user (uid \(geteuid())): its owner could replace reports")
            }
            if info.st_mode & 0o022 != 0 {
                close(fd)
                throw refuse(
                    "is writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8))); use a directory only this agent's user can write, e.g. chmod go-w"
                )
            }
        }
        // access(W_OK) says yes to root on a read-only file system and ignores ACL subtleties;
        // creating a file is the only reliable test.
        let probe = ".stallagent-probe-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let probeFD = openat(fd, probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard probeFD >= 0 else {
            let code = errno
            close(fd)
            throw refuse("not writable: \(Self.errorText(code))")
        }
        close(probeFD)
        unlinkat(fd, probe, 0)
        directoryFD = fd
    }

    deinit { close(directoryFD) }

    private struct Held: Sendable {
        weak var writer: ReportWriter?
    }
    private static let held = Mutex<[String: Held]>([:])

    /// The writer of `directory` that another watch holds, or a new one: every process of a
    /// family writes into one directory, and one open descriptor serves them all (a family of
    /// 600 had 600 descriptors of the same directory). Stall files are keyed by pid, so
    /// sharing changes no name. Validated when first opened, as `init` does.
    public static func shared(directory: String) throws -> ReportWriter {
        if let writer = held.withLock({ $0[directory]?.writer }) { return writer }
        let writer = try ReportWriter(directory: directory)
        held.withLock { table in
            table = table.filter { $0.value.writer != nil }
            table[directory] = Held(writer: writer)
        }
        return writer
    }

    /// Replaces the file `name` in this directory whole (see `AtomicFile`), relative to the
    /// directory opened at start: a component of its path that someone swaps for a link
    /// later (issue 27: root wrote the metrics file and the fingerprint state through a link
    /// planted in a parent directory) changes nothing.
    public func replaceFile(named name: String, with bytes: [UInt8], mode: mode_t = 0o644) throws {
        let temp = try AtomicFile.stage(bytes, directoryFD: directoryFD, name: name, mode: mode)
        if renameat(directoryFD, temp, directoryFD, name) != 0 {
            let code = errno
            unlinkat(directoryFD, temp, 0)
            throw StallAgentError.system(operation: "rename to \(directory)/\(name)", errno: code)
        }
    }

    /// The regular file `name` in this directory (not through a link), up to `maxBytes`; nil
    /// when it is absent, not a regular file, larger, or unreadable.
    public func readFile(named name: String, maxBytes: Int) -> [UInt8]? {
        let fd = openat(directoryFD, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int(info.st_size) <= maxBytes else { return nil }
        return try? SafeFileReader.read(fd: fd, count: Int(info.st_size), path: directory + "/" + name)
    }

    /// O_PATH (x86-64 and arm64 value): Glibc's module leaves it out without _GNU_SOURCE.
    private static let pathOnly: Int32 = 0o10000000

    /// Walks `path` one component at a time with O_NOFOLLOW, creating missing components
    /// (0750); returns the last one opened for reading. A symbolic link is followed only when
    /// nobody else could have planted it: owned by root or by this user, in a directory that
    /// group and others cannot write. systemd's `DynamicUser=` makes `/var/lib/NAME` exactly
    /// such a link (to `private/NAME`); a link in /tmp or in a user-writable directory is not.
    private static func openDirectory(_ path: String, createMissing: Bool, refuse: (String) -> StallAgentError) throws -> Int32 {
        var current = open(path.hasPrefix("/") ? "/" : ".", Self.pathOnly | O_DIRECTORY | O_CLOEXEC)
        guard current >= 0 else { throw refuse(errorText(errno)) }
        var prefix = path.hasPrefix("/") ? "" : "."
        var pending = path.split(separator: "/").map(String.init)[...]
        var linksFollowed = 0
        while let name = pending.popFirst() {
            if name == "." || name.isEmpty { continue }
            prefix += "/" + name
            guard name != ".." else {
                close(current)
                throw refuse("contains '..'; give the directory's own path")
            }
            var next = openat(current, name, Self.pathOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0 && errno == ENOENT && !createMissing {
                close(current)
                throw refuse("\(prefix) does not exist")
            }
            if next < 0 && errno == ENOENT {
                if mkdirat(current, name, 0o750) != 0 && errno != EEXIST {
                    let code = errno
                    close(current)
                    throw refuse("cannot create \(prefix): \(errorText(code))")
                }
                next = openat(current, name, Self.pathOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            if next < 0 {
                let code = errno
                var info = stat()
                let isLink = fstatat(current, name, &info, AT_SYMLINK_NOFOLLOW) == 0 && info.st_mode & S_IFMT == S_IFLNK
                if isLink, linksFollowed < 8, isTrustedLink(info, in: current),
                    let target = readLink(at: current, name), !target.split(separator: "/").contains("..")
                {
                    linksFollowed += 1
                    if target.hasPrefix("/") {
                        close(current)
                        current = open("/", Self.pathOnly | O_DIRECTORY | O_CLOEXEC)
                        guard current >= 0 else { throw refuse(errorText(errno)) }
                    }
                    prefix = String(prefix.dropLast(name.count + 1))
                    pending = target.split(separator: "/").map(String.init)[...] + pending
                    continue
                }
                close(current)
                if isLink { throw refuse("\(prefix) is a symbolic link someone else could have placed; give the directory it points to") }
                if code == ENOTDIR { throw refuse("\(prefix) exists and is not a directory") }
                throw refuse("\(prefix): \(errorText(code))")
            }
            close(current)
            current = next
        }
        let readable = openat(current, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        let code = errno
        close(current)
        guard readable >= 0 else { throw refuse(errorText(code)) }
        return readable
    }

    private static func isTrustedLink(_ link: stat, in directory: Int32) -> Bool {
        guard link.st_uid == 0 || link.st_uid == geteuid() else { return false }
        var parent = stat()
        guard fstat(directory, &parent) == 0 else { return false }
        return (parent.st_uid == 0 || parent.st_uid == geteuid()) && parent.st_mode & 0o022 == 0
    }

    private static func readLink(at directory: Int32, _ name: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBufferPointer { readlinkat(directory, name, $0.baseAddress!, $0.count) }
        guard count > 0, count < buffer.count else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Tells this agent process's reports from another's: two agents on one service (or an
    /// agent restarted within the second) number their stalls from 1 alike.
    public static let processInstance = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        .leftPadded(to: 8)

    /// `<name>_<pid>_<yyyyMMdd-HHmmss>_<reason>_<id>-<instance>` from the stall's start time
    /// (local), so every revision of one stall maps to the same files and names sort by time
    /// per process.
    public func fileStem(for r: StallReport) -> String {
        let name = Self.sanitize(r.process.name, fallback: "process")
        let reason = Self.sanitize(r.reason.name, fallback: "stall")
        return "\(name)_\(r.process.pid)_\(ReportTime.fileStamp(r.span.startTime))_\(reason)_\(r.id)-\(Self.processInstance)"
    }

    /// The longest a process's `*.loop.jsonl` grows: one line every 5 s is ~17 000 lines a
    /// day; past this the agent stops appending (retention removes reports, not these).
    public static let loopHealthLimit = 8 << 20

    /// Appends one interval of a process's loop health to `<name>_<pid>-<instance>.loop.jsonl`
    /// (what `stallagent view` draws as busy share and turns per second). Opened by name in
    /// the kept directory, never through a link; a line is one `write`, so a crash cuts at
    /// most the last one. Best effort: a full disk loses the line and leaves nothing of it.
    public func appendLoopHealth(_ sample: LoopHealthSample) {
        guard var line = try? JSONEncoder().encode(sample) else { return }
        line.append(0x0a)
        let name = "\(Self.sanitize(sample.name, fallback: "process"))_\(sample.pid)-\(Self.processInstance).loop.jsonl"
        let fd = openat(directoryFD, name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, Self.fileMode)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size < Self.loopHealthLimit else { return }
        let written = line.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written != line.count else { return }
        // A full disk: no half line is left behind, nor an empty file this call created.
        if info.st_size == 0 {
            unlinkat(directoryFD, name, 0)
        } else {
            _ = ftruncate(fd, info.st_size)
        }
    }

    /// `stem` overrides the name derived from the report (a rewrite of an existing file).
    /// Each format is rendered on its own: one that cannot be rendered is left out (and named
    /// in the thrown `ReportWriteError.formatsFailed` after the others are written), so a
    /// report never fails as a whole. A failure to store (a full disk) writes nothing.
    public func write(_ r: StallReport, folded: String?, stem: String? = nil) throws -> ReportPaths {
        var failed: [String] = []
        // The text goes last: whoever sees it (the summary line points there) finds the rest.
        var contents: [(suffix: String, bytes: Data)] = []
        do {
            contents.append((".json", try StallReportJSONRenderer.render(r)))
        } catch {
            failed.append("JSON: \(ReportWriteError.describe(error))")
        }
        if let folded { contents.append((".folded", Data(folded.utf8))) }
        contents.append((".txt", Data(StallReportTextRenderer.render(r).utf8)))

        let key = "\(r.process.pid)-\(r.id)"
        let usual = stem ?? fileStem(for: r)
        var name = alternatives.withLock { $0[usual] } ?? usual
        var paths: ReportPaths
        var attempt = 0
        while true {
            do {
                paths = try store(contents, stem: name, folded: folded != nil)
                break
            } catch let error as StallAgentError {
                // Something not ours sits at the report's name (a directory pre-created to
                // suppress reports): take another name rather than lose the report.
                guard case .system(_, let code) = error, code == EISDIR || code == ENOTEMPTY || code == ENOTDIR,
                    attempt < 3
                else { throw error }
                attempt += 1
                name = usual + "-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
            }
        }
        if name != usual { alternatives.withLock { $0[usual] = name } }
        // The name carries the reason: when it changes (hang → died, lock → deadlock) the
        // earlier revision must go, or it would stay behind as a stale "ongoing" report.
        if let previous = written.withLock({ $0.updateValue(paths, forKey: key) }), previous.text != paths.text {
            for path in [previous.text, previous.json, previous.folded].compactMap({ $0 }) {
                unlinkat(directoryFD, (path as NSString).lastPathComponent, 0)
            }
        }
        fsync(directoryFD)
        if !failed.isEmpty { throw ReportWriteError.formatsFailed(paths: paths, failures: failed) }
        return paths
    }

    /// Stages every file, then renames them all: a failure to store writes nothing.
    private func store(_ contents: [(suffix: String, bytes: Data)], stem: String, folded: Bool) throws -> ReportPaths {
        let base = directory + "/" + stem
        var paths = ReportPaths(text: base + ".txt", json: base + ".json", folded: folded ? base + ".folded" : nil)
        paths.stem = stem
        var staged: [String] = []
        do {
            for file in contents {
                staged.append(try AtomicFile.stage(file.bytes, directoryFD: directoryFD, name: stem + file.suffix, mode: Self.fileMode))
            }
            for (temp, file) in zip(staged, contents) where renameat(directoryFD, temp, directoryFD, stem + file.suffix) != 0 {
                throw StallAgentError.system(operation: "rename \(temp) to \(base + file.suffix)", errno: errno)
            }
        } catch {
            for temp in staged { unlinkat(directoryFD, temp, 0) }
            throw error
        }
        return paths
    }

    /// Forgets a stall whose last revision is written, so a long watch keeps no state per stall.
    public func finished(pid: Int32, id: Int) {
        guard let paths = written.withLock({ $0.removeValue(forKey: "\(pid)-\(id)") }), let stem = paths.stem else { return }
        alternatives.withLock { table in
            for (usual, alternative) in table where alternative == stem { table[usual] = nil }
        }
    }

    /// Report files: readable by the agent's user and group only (they hold command lines,
    /// paths and addresses of the watched process).
    public static let fileMode: mode_t = 0o640

    /// Keeps `[A-Za-z0-9._-]` so a process name cannot add directories, spaces or control
    /// characters to a file name.
    package static func sanitize(_ text: String, fallback: String, alsoAllowed: String = "") -> String {
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
