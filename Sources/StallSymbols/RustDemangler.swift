/// Rust symbol names, both manglings (RFC 2603 and rustc-demangle's behaviour), printed the
/// way `rustc-demangle`'s alternate form does: without the legacy hash or crate
/// disambiguators. Returns nil for anything that is not a well-formed Rust name, so callers
/// fall back to other demanglers or the raw name. Hand-written: no Rust demangling library
/// is available to a Swift build, and the grammar is small.
public enum RustDemangler {
    /// Output beyond this is treated as malformed: backreferences can make a short name
    /// expand exponentially.
    static let maxOutput = 4096
    static let maxDepth = 200

    public static func demangle(_ name: String) -> String? {
        let bytes = Array(name.utf8)
        if let body = strip(bytes, prefixes: ["_ZN", "__ZN"]) { return legacy(body) }
        // v0 paths start with an upper-case tag; a version number would come first, and
        // none but the implicit 0 exists.
        if let body = strip(bytes, prefixes: ["_R", "__R"]), let first = body.first, first >= 0x41, first <= 0x5a {
            var parser = V0(body)
            return parser.demangle()
        }
        return nil
    }

    private static func strip(_ bytes: [UInt8], prefixes: [String]) -> ArraySlice<UInt8>? {
        for prefix in prefixes where bytes.starts(with: prefix.utf8) {
            return bytes[prefix.utf8.count...]
        }
        return nil
    }

    // MARK: Legacy: _ZN <len><ident>… 17h<16 hex>E [.suffix]

    /// Only names ending in rustc's `h<16 hex digits>` element are claimed: every other `_ZN`
    /// name is C++.
    static func legacy(_ body: ArraySlice<UInt8>) -> String? {
        var elements: [ArraySlice<UInt8>] = []
        var i = body.startIndex
        while i < body.endIndex, body[i] != UInt8(ascii: "E") {
            var length = 0
            let digitsStart = i
            while i < body.endIndex, let digit = decimalDigit(body[i]) {
                length = length * 10 + digit
                guard length <= body.count else { return nil }
                i += 1
            }
            guard i > digitsStart, length > 0, i + length <= body.endIndex else { return nil }
            elements.append(body[i..<i + length])
            i += length
        }
        guard i < body.endIndex, elements.count >= 2 else { return nil }
        let rest = body[(i + 1)...]
        guard rest.isEmpty || rest.first == UInt8(ascii: ".") else { return nil }
        let hash = elements.removeLast()
        guard hash.count == 17, hash.first == UInt8(ascii: "h"), hash.dropFirst().allSatisfy({ hexDigit($0) != nil })
        else { return nil }
        return elements.map(unescapeLegacy).joined(separator: "::")
    }

    private static let legacyEscapes: [String: String] = [
        "SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")", "C": ",",
    ]

    static func unescapeLegacy(_ element: ArraySlice<UInt8>) -> String {
        var rest = Substring(String(decoding: element, as: UTF8.self))
        if rest.hasPrefix("_$") { rest = rest.dropFirst() }
        var out = ""
        while !rest.isEmpty {
            if rest.hasPrefix("..") {
                out += "::"
                rest = rest.dropFirst(2)
            } else if rest.hasPrefix(".") {
                out += "."
                rest = rest.dropFirst()
            } else if rest.hasPrefix("$") {
                guard let end = rest.dropFirst().firstIndex(of: "$") else { break }
                let escape = String(rest[rest.index(after: rest.startIndex)..<end])
                if let plain = legacyEscapes[escape] {
                    out += plain
                } else if escape.hasPrefix("u"), escape.dropFirst().allSatisfy({ "0123456789abcdef".contains($0) }),
                    let value = UInt32(escape.dropFirst(), radix: 16), let scalar = Unicode.Scalar(value),
                    !scalar.properties.generalCategory.isControl
                {
                    out.unicodeScalars.append(scalar)
                } else {
                    break
                }
                rest = rest[rest.index(after: end)...]
            } else if let next = rest.firstIndex(where: { $0 == "$" || $0 == "." }) {
                out += rest[..<next]
                rest = rest[next...]
            } else {
                break
            }
        }
        return out + rest
    }

    static func decimalDigit(_ byte: UInt8) -> Int? {
        byte >= 0x30 && byte <= 0x39 ? Int(byte - 0x30) : nil
    }

    static func hexDigit(_ byte: UInt8) -> Int? {
        if let d = decimalDigit(byte) { return d }
        return byte >= 0x61 && byte <= 0x66 ? Int(byte - 0x61 + 10) : nil
    }
}

private extension Unicode.GeneralCategory {
    var isControl: Bool { self == .control }
}
