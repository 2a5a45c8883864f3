import CPosix
import Synchronization

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// Shares opened ELF images between targets and captures, keyed by file identity (device,
/// inode, size, mtime) so a replaced file on the same path is reloaded and two paths to one
/// file (e.g. through different /proc/PID/root) share the tables.
///
/// Every file-system call runs on `BoundedFileIO`'s worker with a deadline: a module on a hung
/// mount is marked unavailable (and its file system skipped from then on) instead of hanging
/// the probe loop.
public final class ElfImageCache: Sendable {
    struct FileIdentity: Hashable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: Int
    }

    /// What `/proc/PID/maps` says a module is: enough to find a loaded image again without
    /// touching the file system.
    struct MappedIdentity: Hashable {
        var device: String
        var inode: UInt64
    }

    /// Why a module has no image, for the report.
    public enum Unavailable: String, Sendable {
        /// Opening or reading it did not finish within the deadline (a hung mount).
        case notAnswering = "file system not answering"
        /// The file at the path is not the one mapped (replaced or renamed over), and the
        /// mapped one cannot be opened.
        case replaced = "replaced on disk since it was mapped"
    }

    private let images = Mutex<[FileIdentity: ElfImage]>([:])
    private let failures = Mutex<Set<FileIdentity>>([])
    private let mapped = Mutex<[MappedIdentity: ElfImage]>([:])
    private let unavailable = Mutex<[MappedIdentity: Unavailable]>([:])
    /// Devices (maps notation) and paths that once missed the deadline: not tried again.
    private let hungDevices = Mutex<Set<String>>([])
    private let hungPaths = Mutex<Set<String>>([])
    let io: BoundedFileIO
    let deadline: Double

    public static let shared = ElfImageCache()

    public init(io: BoundedFileIO = .shared, deadline: Double = BoundedFileIO.defaultDeadline) {
        self.io = io
        self.deadline = deadline
    }

    /// Opens (or reuses) the image at `path`. Returns nil for files that are not ELF or
    /// cannot be read (in time); the failure is remembered so it is not retried on every frame.
    public func image(atPath path: String, displayPath: String) -> ElfImage? {
        if hungPaths.withLock({ $0.contains(path) }) { return nil }
        guard let result = io.run(deadline: deadline, { [self] in loadImage(atPath: path, displayPath: displayPath) }) else {
            hungPaths.withLock { _ = $0.insert(path) }
            return nil
        }
        return result
    }

    private func loadImage(atPath path: String, displayPath: String) -> ElfImage? {
        guard let (fd, info) = try? SafeFileReader.openRegularFile(path, maxBytes: ElfImage.maxFileBytes) else { return nil }
        defer { close(fd) }
        let key = FileIdentity(info)
        if let image = images.withLock({ $0[key] }) { return image }
        if failures.withLock({ $0.contains(key) }) { return nil }
        guard let image = try? ElfImage(fileDescriptor: fd, info: info, path: path, displayPath: displayPath) else {
            failures.withLock { _ = $0.insert(key) }
            return nil
        }
        images.withLock { $0[key] = image }
        return image
    }

    /// The image of a module mapped in `pid`, checked to be the very file the maps line names
    /// (device and inode): the path may since name another file (the owner renamed a copy
    /// over it), which must not lend the module its build-id or symbols. Then the mapped file
    /// itself is opened through `/proc/PID/map_files` where permitted (CAP_SYS_ADMIN).
    func moduleImage(pid: Int32, mapping: MemoryMapEntry, path: String) -> (ElfImage?, Unavailable?) {
        let identity = MappedIdentity(device: mapping.device, inode: mapping.inode)
        if let image = mapped.withLock({ $0[identity] }), !image.changedSinceMapping { return (image, nil) }
        if let reason = unavailable.withLock({ $0[identity] }) { return (nil, reason) }
        if hungDevices.withLock({ $0.contains(mapping.device) }) { return (nil, .notAnswering) }
        let candidates = [
            "/proc/\(pid)/root" + path,
            "/proc/\(pid)/map_files/\(String(mapping.start, radix: 16))-\(String(mapping.end, radix: 16))",
        ]
        let outcome = io.run(deadline: deadline) { [self] () -> (ElfImage?, Unavailable?) in
            var replaced = false
            for candidate in candidates {
                guard let (fd, info) = try? SafeFileReader.openRegularFile(candidate, maxBytes: ElfImage.maxFileBytes)
                else { continue }
                defer { close(fd) }
                guard Self.isMappedFile(info, mapping: mapping, fd: fd) else {
                    replaced = true
                    continue
                }
                let key = FileIdentity(info)
                if let image = images.withLock({ $0[key] }) { return (image, nil) }
                guard let image = try? ElfImage(fileDescriptor: fd, info: info, path: candidate, displayPath: path)
                else { return (nil, nil) }
                images.withLock { $0[key] = image }
                return (image, nil)
            }
            return (nil, replaced ? .replaced : nil)
        }
        guard let (image, reason) = outcome else {
            hungDevices.withLock { _ = $0.insert(mapping.device) }
            unavailable.withLock { $0[identity] = .notAnswering }
            return (nil, .notAnswering)
        }
        if let image {
            mapped.withLock { $0[identity] = image }
        } else if let reason {
            unavailable.withLock { $0[identity] = reason }
        }
        return (image, reason)
    }

    /// The open file is the mapped one when device and inode match. Overlay file systems show
    /// the underlying file's numbers in maps and their own to fstat, so there a match of the
    /// inode alone is not required; the path's file is accepted unless the maps line says
    /// the mapped file was deleted.
    static func isMappedFile(_ info: stat, mapping: MemoryMapEntry, fd: Int32) -> Bool {
        if UInt64(info.st_ino) == mapping.inode && SafeFileReader.deviceText(UInt64(info.st_dev)) == mapping.device {
            return true
        }
        let overlayMagic = 0x794c_7630
        return !mapping.isDeleted && sa_fstatfs_type(fd) == overlayMagic
    }
}

extension ElfImageCache.FileIdentity {
    init(_ info: stat) {
        self.init(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modified: Int(info.st_mtim.tv_sec))
    }
}
