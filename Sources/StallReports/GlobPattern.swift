#if canImport(Glibc)
import Glibc
#endif

/// Shell-style patterns for `--idle-frame` ("*RunLoop*", "uv_run"), via fnmatch(3).
/// A pattern without wildcards matches as a substring, which is what people mean by a name.
public enum GlobPattern {
    public static func matches(_ pattern: String, _ name: String) -> Bool {
        if !pattern.contains(where: { "*?[".contains($0) }) { return name.contains(pattern) }
        return fnmatch(pattern, name, 0) == 0
    }
}
