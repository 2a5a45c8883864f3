import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Shares opened ELF images between targets and captures, keyed by file identity (device,
/// inode, size, mtime) so a replaced file on the same path is reloaded and two paths to one
/// file (e.g. through different /proc/PID/root) share the tables.
public final class ElfImageCache: @unchecked Sendable {
    struct FileIdentity: Hashable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: Int
    }

    private let images = Mutex<[FileIdentity: ElfImage]>([:])
    private let failures = Mutex<Set<FileIdentity>>([])

    public static let shared = ElfImageCache()

    public init() {}

    /// Opens (or reuses) the image at `path`. Returns nil for files that are not ELF or
    /// cannot be read; the failure is remembered so it is not retried on every frame.
    public func image(atPath path: String, displayPath: String) -> ElfImage? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let key = FileIdentity(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modified: Int(info.st_mtim.tv_sec))
        if let image = images.withLock({ $0[key] }) { return image }
        if failures.withLock({ $0.contains(key) }) { return nil }
        guard let image = try? ElfImage(path: path, displayPath: displayPath) else {
            failures.withLock { _ = $0.insert(key) }
            return nil
        }
        images.withLock { $0[key] = image }
        return image
    }
}
