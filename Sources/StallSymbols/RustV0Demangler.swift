extension RustDemangler {
    /// RFC 2603 ("v0") mangling: `_R <path> [<instantiating-crate>] [<vendor-suffix>]`.
    /// A recursive-descent printer over the grammar; backreferences (`B`) re-parse from an
    /// earlier position, always strictly backwards, and depth and output are bounded.
    struct V0 {
        struct Malformed: Error {}

        let bytes: [UInt8]
        var position = 0
        var output = ""
        var printing = true
        var depth = 0
        /// Lifetimes bound by enclosing `for<…>` binders, for naming them 'a, 'b, ….
        var boundLifetimes: UInt64 = 0

        init(_ body: ArraySlice<UInt8>) { bytes = Array(body) }

        mutating func demangle() -> String? {
            do {
                try path(inValue: true)
                // The instantiating crate is not printed; a vendor suffix (".llvm.…") is dropped.
                if position < bytes.count, bytes[position] != UInt8(ascii: "."), bytes[position] != UInt8(ascii: "$") {
                    let saved = printing
                    printing = false
                    try path(inValue: false)
                    printing = saved
                }
                guard
                    position == bytes.count || bytes[position] == UInt8(ascii: ".")
                        || bytes[position] == UInt8(ascii: "$")
                else { return nil }
                return output
            } catch {
                return nil
            }
        }

        // MARK: Lexing

        mutating func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

        mutating func next() throws -> UInt8 {
            guard position < bytes.count else { throw Malformed() }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func eat(_ c: Character) -> Bool {
            guard let byte = peek(), byte == c.asciiValue! else { return false }
            position += 1
            return true
        }

        mutating func print(_ text: String) throws {
            guard printing else { return }
            output += text
            if output.utf8.count > RustDemangler.maxOutput { throw Malformed() }
        }

        /// `_` is 0; otherwise base-62 digits then `_`, plus one.
        mutating func base62() throws -> UInt64 {
            if eat("_") { return 0 }
            var value: UInt64 = 0
            while true {
                let c = try next()
                if c == UInt8(ascii: "_") { break }
                let digit: UInt64
                switch c {
                case 0x30...0x39: digit = UInt64(c - 0x30)
                case 0x61...0x7a: digit = UInt64(c - 0x61 + 10)
                case 0x41...0x5a: digit = UInt64(c - 0x41 + 36)
                default: throw Malformed()
                }
                let (m, o1) = value.multipliedReportingOverflow(by: 62)
                let (a, o2) = m.addingReportingOverflow(digit)
                guard !o1, !o2 else { throw Malformed() }
                value = a
            }
            let (result, overflow) = value.addingReportingOverflow(1)
            guard !overflow else { throw Malformed() }
            return result
        }

        mutating func decimal() throws -> Int {
            guard let first = peek(), let d = RustDemangler.decimalDigit(first) else { throw Malformed() }
            position += 1
            if d == 0 { return 0 }
            var value = d
            while let c = peek(), let digit = RustDemangler.decimalDigit(c) {
                position += 1
                value = value * 10 + digit
                guard value <= bytes.count else { throw Malformed() }
            }
            return value
        }

        /// `s <base62>` gives n+1; absent means 0.
        mutating func disambiguator() throws -> UInt64 { eat("s") ? try base62() + 1 : 0 }

        /// `[u] <decimal> [_] <bytes>`; punycode (`u`) is shown raw as rustc-demangle does
        /// when it cannot decode.
        mutating func identifier() throws -> (text: String, punycode: Bool) {
            let punycode = eat("u")
            let length = try decimal()
            _ = eat("_")
            guard length <= bytes.count - position else { throw Malformed() }
            let text = String(decoding: bytes[position..<position + length], as: UTF8.self)
            position += length
            return (text, punycode)
        }

        mutating func enter() throws {
            depth += 1
            if depth > RustDemangler.maxDepth { throw Malformed() }
        }

        /// `B <base62>`: continue at an earlier position, then come back.
        mutating func backref(_ body: (inout V0) throws -> Void) throws {
            let start = position - 1
            let target = try base62()
            guard target < UInt64(start) else { throw Malformed() }
            let resume = position
            position = Int(target)
            try body(&self)
            position = resume
        }

        /// `L <base62>`: 0 is the erased lifetime; others count back from the innermost binder.
        mutating func lifetime(_ index: UInt64) throws {
            guard index != 0 else { return try print("'_") }
            guard index <= boundLifetimes else { throw Malformed() }
            let depth = boundLifetimes - index
            try print(depth < 26 ? "'" + String(UnicodeScalar(UInt8(ascii: "a") + UInt8(depth))) : "'_\(depth)")
        }

        /// `[G <base62>]` then `body`: prints `for<'a, …> ` for the lifetimes it binds.
        mutating func binder(_ body: (inout V0) throws -> Void) throws {
            var count: UInt64 = 0
            if eat("G") { count = try base62() + 1 }
            guard count < 1000 else { throw Malformed() }
            if count > 0 {
                try print("for<")
                for i in 0..<count {
                    if i > 0 { try print(", ") }
                    boundLifetimes += 1
                    try lifetime(1)
                }
                try print("> ")
            }
            try body(&self)
            boundLifetimes -= count
        }

        // MARK: Grammar

        mutating func path(inValue: Bool) throws {
            try enter()
            defer { depth -= 1 }
            let tag = try next()
            switch tag {
            case UInt8(ascii: "C"):
                _ = try disambiguator()
                let name = try identifier()
                try print(name.punycode ? "punycode{\(name.text)}" : name.text)
            case UInt8(ascii: "M"), UInt8(ascii: "X"), UInt8(ascii: "Y"):
                if tag != UInt8(ascii: "Y") {
                    // The impl's own path is not printed.
                    _ = try disambiguator()
                    let saved = printing
                    printing = false
                    try path(inValue: false)
                    printing = saved
                }
                try print("<")
                try type()
                if tag != UInt8(ascii: "M") {
                    try print(" as ")
                    try path(inValue: false)
                }
                try print(">")
            case UInt8(ascii: "N"):
                let namespace = try next()
                guard (0x41...0x5a).contains(namespace) || (0x61...0x7a).contains(namespace) else { throw Malformed() }
                try path(inValue: inValue)
                let index = try disambiguator()
                let name = try identifier()
                let text = name.punycode ? "punycode{\(name.text)}" : name.text
                if (0x41...0x5a).contains(namespace) {
                    let kind: String
                    switch namespace {
                    case UInt8(ascii: "C"): kind = "closure"
                    case UInt8(ascii: "S"): kind = "shim"
                    default: kind = String(UnicodeScalar(namespace))
                    }
                    try print("::{" + kind + (text.isEmpty ? "" : ":" + text) + "#\(index)}")
                } else if !text.isEmpty {
                    try print("::" + text)
                }
            case UInt8(ascii: "I"):
                try path(inValue: inValue)
                try print(inValue ? "::<" : "<")
                var first = true
                while !eat("E") {
                    if !first { try print(", ") }
                    first = false
                    try genericArgument()
                }
                try print(">")
            case UInt8(ascii: "B"):
                try backref { try $0.path(inValue: inValue) }
            default:
                throw Malformed()
            }
        }

        mutating func genericArgument() throws {
            if eat("L") {
                try lifetime(try base62())
            } else if eat("K") {
                try constant()
            } else {
                try type()
            }
        }

        static let basicTypes: [UInt8: String] = [
            UInt8(ascii: "a"): "i8", UInt8(ascii: "b"): "bool", UInt8(ascii: "c"): "char", UInt8(ascii: "d"): "f64",
            UInt8(ascii: "e"): "str", UInt8(ascii: "f"): "f32", UInt8(ascii: "h"): "u8", UInt8(ascii: "i"): "isize",
            UInt8(ascii: "j"): "usize", UInt8(ascii: "l"): "i32", UInt8(ascii: "m"): "u32", UInt8(ascii: "n"): "i128",
            UInt8(ascii: "o"): "u128", UInt8(ascii: "s"): "i16", UInt8(ascii: "t"): "u16", UInt8(ascii: "u"): "()",
            UInt8(ascii: "v"): "...", UInt8(ascii: "x"): "i64", UInt8(ascii: "y"): "u64", UInt8(ascii: "z"): "!",
            UInt8(ascii: "p"): "_",
        ]

        mutating func type() throws {
            try enter()
            defer { depth -= 1 }
            guard let tag = peek() else { throw Malformed() }
            if let basic = Self.basicTypes[tag] {
                position += 1
                try print(basic)
                return
            }
            switch tag {
            case UInt8(ascii: "R"), UInt8(ascii: "Q"):
                position += 1
                try print("&")
                if eat("L") {
                    // Erased (0) lifetimes are not printed; a named one goes before `mut`.
                    let index = try base62()
                    if index != 0 {
                        try lifetime(index)
                        try print(" ")
                    }
                }
                if tag == UInt8(ascii: "Q") { try print("mut ") }
                try type()
            case UInt8(ascii: "P"), UInt8(ascii: "O"):
                position += 1
                try print(tag == UInt8(ascii: "P") ? "*const " : "*mut ")
                try type()
            case UInt8(ascii: "A"), UInt8(ascii: "S"):
                position += 1
                try print("[")
                try type()
                if tag == UInt8(ascii: "A") {
                    try print("; ")
                    try constant()
                }
                try print("]")
            case UInt8(ascii: "T"):
                position += 1
                try print("(")
                var count = 0
                while !eat("E") {
                    if count > 0 { try print(", ") }
                    try type()
                    count += 1
                }
                try print(count == 1 ? ",)" : ")")
            case UInt8(ascii: "F"):
                position += 1
                try binder { v in
                    if v.eat("U") { try v.print("unsafe ") }
                    if v.eat("K") {
                        if v.eat("C") {
                            try v.print("extern \"C\" ")
                        } else {
                            let abi = try v.identifier()
                            try v.print("extern \"\(abi.text.replacingOccurrences(of: "_", with: "-"))\" ")
                        }
                    }
                    try v.print("fn(")
                    var first = true
                    while !v.eat("E") {
                        if !first { try v.print(", ") }
                        first = false
                        try v.type()
                    }
                    try v.print(")")
                    if v.eat("u") { return }
                    try v.print(" -> ")
                    try v.type()
                }
            case UInt8(ascii: "D"):
                position += 1
                try print("dyn ")
                try binder { v in
                    var first = true
                    while !v.eat("E") {
                        if !first { try v.print(" + ") }
                        first = false
                        try v.dynTrait()
                    }
                }
                guard eat("L") else { throw Malformed() }
                let index = try base62()
                if index != 0 {
                    try print(" + ")
                    try lifetime(index)
                }
            case UInt8(ascii: "B"):
                position += 1
                try backref { try $0.type() }
            default:
                try path(inValue: false)
            }
        }

        /// `<path> {p <name> <type>}`: associated-type bindings go inside the trait's `<…>`.
        mutating func dynTrait() throws {
            let opened = try pathMaybeOpenGenerics()
            var open = opened
            while eat("p") {
                try print(open ? ", " : "<")
                open = true
                let name = try identifier()
                try print(name.text + " = ")
                try type()
            }
            if open { try print(">") }
        }

        /// Prints a path in type position; returns true if it left a `<…` open (generic
        /// arguments) so associated bindings can be appended.
        mutating func pathMaybeOpenGenerics() throws -> Bool {
            // A backreference to a generic path (`dyn FnMut<(…), Output = ()>` mentioned
            // twice) must leave its `<…` open just like the path it points at.
            if peek() == UInt8(ascii: "B") {
                position += 1
                var opened = false
                try backref { opened = try $0.pathMaybeOpenGenerics() }
                return opened
            }
            if peek() == UInt8(ascii: "I") {
                position += 1
                try path(inValue: false)
                try print("<")
                var first = true
                while !eat("E") {
                    if !first { try print(", ") }
                    first = false
                    try genericArgument()
                }
                return true
            }
            try path(inValue: false)
            return false
        }

        mutating func constant() throws {
            try enter()
            defer { depth -= 1 }
            if eat("p") {
                try print("_")
                return
            }
            if eat("B") {
                try backref { try $0.constant() }
                return
            }
            let tag = try next()
            let negative = eat("n")
            var digits = ""
            while true {
                let c = try next()
                if c == UInt8(ascii: "_") { break }
                guard RustDemangler.hexDigit(c) != nil else { throw Malformed() }
                digits.append(Character(UnicodeScalar(c)))
            }
            guard digits.count <= 32 else { throw Malformed() }
            let value = digits.isEmpty ? 0 : UInt64(digits, radix: 16)
            switch tag {
            case UInt8(ascii: "b"):
                guard !negative, let value, value <= 1 else { throw Malformed() }
                try print(value == 1 ? "true" : "false")
            case UInt8(ascii: "c"):
                guard !negative, let value, let scalar = Unicode.Scalar(UInt32(truncatingIfNeeded: value)),
                    value <= 0x10ffff
                else { throw Malformed() }
                try print("'" + String(Character(scalar)).debugDescription.dropFirst().dropLast() + "'")
            case UInt8(ascii: "a"), UInt8(ascii: "s"), UInt8(ascii: "l"), UInt8(ascii: "x"), UInt8(ascii: "n"),
                UInt8(ascii: "i"), UInt8(ascii: "h"), UInt8(ascii: "t"), UInt8(ascii: "m"), UInt8(ascii: "y"),
                UInt8(ascii: "o"), UInt8(ascii: "j"):
                if let value {
                    try print((negative ? "-" : "") + String(value))
                } else {
                    try print((negative ? "-" : "") + "0x" + digits)
                }
            default:
                throw Malformed()
            }
        }
    }
}
