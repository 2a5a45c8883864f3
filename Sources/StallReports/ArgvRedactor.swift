/// Removes what looks like a secret from a command line before it goes into a report (reports
/// are files others may read; command lines carry `--password=…` more often than they should).
/// On by default; `--keep-argv` turns it off. Redacted: the value of an option whose name looks
/// secret (`--password=X`, `--token X`, `--db-pass=X`), `-p` with a value (`-pX`, `-p X`, as
/// mysql and redis-cli take passwords), `KEY=VALUE` with a secret-looking key
/// (`PGPASSWORD=X`), and the password of a URL's userinfo (`redis://user:X@host`).
public enum ArgvRedactor {
    public static let marker = "<redacted>"

    /// Words that make an option or variable name secret-looking (compared without case,
    /// `-` and `_`).
    static let secretWords = [
        "password", "passwd", "passphrase", "pwd", "secret", "token", "apikey", "auth", "credential",
        "privatekey", "accesskey", "secretkey", "signature", "cookie",
    ]

    public static func redact(_ argv: [String]) -> [String] {
        var out: [String] = []
        out.reserveCapacity(argv.count)
        var redactNext = false
        for (index, argument) in argv.enumerated() {
            if redactNext {
                out.append(marker)
                redactNext = false
                continue
            }
            // argv[0] is the program; never an option.
            guard index > 0 else {
                out.append(redactURLs(argument))
                continue
            }
            if argument.hasPrefix("-"), argument != "-", argument != "--" {
                let body = argument.drop(while: { $0 == "-" })
                if let equals = body.firstIndex(of: "=") {
                    let name = body[..<equals]
                    if isSecretName(name) {
                        out.append(String(argument[..<argument.index(after: equals)]) + marker)
                    } else {
                        out.append(redactURLs(argument))
                    }
                    continue
                }
                if argument == "-p" || (isSecretName(body) && !argument.hasPrefix("--no-")) {
                    // The value follows, unless this is the last argument or the next is an option.
                    out.append(argument)
                    if index + 1 < argv.count, !argv[index + 1].hasPrefix("-") { redactNext = true }
                    continue
                }
                if argument.hasPrefix("-p"), !argument.hasPrefix("--"), argument.count > 2 {
                    out.append("-p" + marker)
                    continue
                }
                out.append(argument)
                continue
            }
            if let equals = argument.firstIndex(of: "="), isSecretName(argument[..<equals]),
                !argument[..<equals].contains("/")
            {
                out.append(String(argument[..<argument.index(after: equals)]) + marker)
                continue
            }
            out.append(redactURLs(argument))
        }
        return out
    }

    static func isSecretName(_ name: Substring) -> Bool {
        let key = name.lowercased().filter { $0 != "-" && $0 != "_" && $0 != "." }
        guard !key.isEmpty, key.count <= 64 else { return false }
        // "pass" alone only as the end of a name (--db-pass): inside one it is "passive", "bypass".
        return key.hasSuffix("pass") || secretWords.contains { key.contains($0) }
    }

    /// `scheme://user:password@host…` → `scheme://user:<redacted>@host…`, anywhere in the text.
    static func redactURLs(_ text: String) -> String {
        guard text.contains("://"), text.contains("@") else { return text }
        var result = ""
        var rest = Substring(text)
        while let schemeEnd = rest.range(of: "://") {
            result += rest[..<schemeEnd.upperBound]
            rest = rest[schemeEnd.upperBound...]
            // The authority ends at the first '/', '?' or '#'; userinfo ends at its last '@'.
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" || $0 == " " }) ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                result += authority[...colon] + marker + authority[at...]
            } else {
                result += authority
            }
            rest = rest[authorityEnd...]
        }
        return result + rest
    }
}
