import CDemangle

#if canImport(Glibc)
import Glibc
#endif

/// Turns linker names into the names people write: Itanium C++ (`_Z…`) through libstdc++,
/// Swift (`$s…`, `_T0…`) through the Swift runtime. Anything else is returned unchanged.
public enum Demangler {
    public static func demangle(_ name: String) -> String {
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
