import CDemangle

#if canImport(Glibc)
import Glibc
#endif

/// Turns linker names into the names people write: Rust (legacy `_ZN…17h…E` and v0 `_R…`)
/// by `RustDemangler`, Itanium C++ (`_Z…`) through libstdc++, Swift (`$s…`, `_T0…`) through
/// the Swift runtime. Anything else is returned unchanged.
public enum Demangler {
    public static func demangle(_ name: String) -> String {
        // Rust first: its legacy names are also valid C++ names, which c++ would print with
        // the hash as a namespace.
        if name.hasPrefix("_ZN") || name.hasPrefix("_R"), let rust = RustDemangler.demangle(name) {
            return rust
        }
        if name.hasPrefix("_Z") {
            if let result = sa_demangle_cxx(name) {
                defer { free(result) }
                return String(cString: result)
            }
        } else if name.hasPrefix("$s") || name.hasPrefix("$S") || name.hasPrefix("_T0") || name.hasPrefix("_$s") {
            let utf8 = Array(name.utf8)
            if let result = utf8.withUnsafeBufferPointer({ buffer in
                buffer.withMemoryRebound(to: CChar.self) { sa_demangle_swift($0.baseAddress, $0.count) }
            }) {
                defer { free(result) }
                return String(cString: result)
            }
        }
        return name
    }
}
