import Foundation

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// The name a process was started by when it differs from the file it maps. Debian's
/// `redis-server` is a symlink to `redis-check-rdb`: the kernel's maps (and /proc/PID/exe)
/// show the target file, so every frame would say `redis-check-rdb` although the user ran,
/// and `ps` shows, `redis-server`. The name given to execve survives in `comm` (and usually
/// in argv[0]); it is used only when it is a symlink, next to the file or at argv[0]'s path,
/// that resolves to the very inode mapped.
enum ExecutableAlias {
    static func name(pid: Int32, mappedPath: String) -> String? {
        let mappedName = mappedPath.split(separator: "/").last.map(String.init) ?? mappedPath
        guard let comm = try? ProcFS.readText("/proc/\(pid)/comm", pid: pid).trimmingCharacters(in: .newlines),
            !comm.isEmpty, comm != mappedName
        else { return nil }
        let root = "/proc/\(pid)/root"
        var mapped = stat()
        guard stat(root + mappedPath, &mapped) == 0 else { return nil }

        let directory = String(mappedPath[..<(mappedPath.lastIndex(of: "/") ?? mappedPath.startIndex)])
        var candidates: [String] = []
        // comm is cut at 15 bytes; argv[0] (before any proctitle suffix) gives the full name.
        if let bytes = try? ProcFS.readBytes("/proc/\(pid)/cmdline", pid: pid, limit: 4096),
            let first = bytes.split(separator: 0, omittingEmptySubsequences: false).first
        {
            let argv0 = String(decoding: first, as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
            let base = argv0.split(separator: "/").last.map(String.init) ?? argv0
            if base.hasPrefix(comm) {
                if argv0.hasPrefix("/") { candidates.append(argv0) }
                candidates.append(directory + "/" + base)
            }
        }
        candidates.append(directory + "/" + comm)
        for candidate in candidates {
            var link = stat()
            var target = stat()
            guard lstat(root + candidate, &link) == 0, (link.st_mode & S_IFMT) == S_IFLNK,
                stat(root + candidate, &target) == 0,
                target.st_dev == mapped.st_dev, target.st_ino == mapped.st_ino
            else { continue }
            let name = candidate.split(separator: "/").last.map(String.init) ?? candidate
            return name.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7f }) ? name : nil
        }
        return nil
    }
}
