#if canImport(Glibc)
import Glibc
#endif

enum FileHandleOutput {
    static func standardError(_ text: String) {
        fputs(text, stderr)
    }

    static func standardOutput(_ text: String) {
        fputs(text, stdout)
        fflush(stdout)
    }
}
