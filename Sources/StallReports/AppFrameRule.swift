import Foundation
import StallDetection
import StallCapture
import StallSymbols

/// Which frames are the application's own (Sentry's `in_app`): the culprit, the stall frame and
/// the fingerprint take the innermost of them, so the first line of a report names code its
/// reader can change rather than the C library, an interpreter, an event-loop library or an
/// installed package (docs/architecture.md, "The culprit").
///
/// Defaults, when no user pattern decides:
/// - machine code: the main executable and shared libraries outside the system's directories
///   are the application's, but for the standard libraries compiled into them (Rust's `std`,
///   `core`, `alloc` and `test`, C++'s `std`) and Rust's crates from the registry; shared libraries under `/usr`, `/lib`, and runtimes by name
///   (interpreters, libuv, GLib, libevent, V8, Lua) are not, nor Python extensions in the
///   standard library or installed packages and Node addons in `node_modules`, wherever they are;
/// - Python: the program's own files; not the standard library, `site-packages`,
///   `dist-packages` or frozen modules;
/// - PHP: the scripts' own functions; not PHP's own (internal) functions, Composer's `vendor/`
///   or the distribution's `/usr/share/php`;
/// - Ruby: the scripts' own methods and blocks; not methods written in C (`sleep`), Ruby's
///   own library (`/usr/lib/ruby/`, `<internal:…>`) or gems (any `/gems/` directory, Bundler's
///   `vendor/bundle`);
/// - JIT code (a perf map's names) and JavaScript functions (`V8FrameReader`): the script's
///   own functions; not `node:` modules, `node_modules`, V8 builtins and stubs.
///
/// `--app-frames GLOB` says what is the user's: a pattern is matched against a frame's
/// module name, module path, source file and function; `!GLOB` says what is not. The last
/// matching pattern wins, as in a `.gitignore`.
public struct AppFrameRule: Sendable {
    public var patterns: [String]

    public init(patterns: [String] = []) {
        self.patterns = patterns
    }

    /// nil: nothing to go on (no module and no name).
    public func isApp(_ frame: SymbolizedFrame) -> Bool? {
        if let decided = userDecision(frame) { return decided }
        return Self.defaultDecision(frame)
    }

    private func userDecision(_ frame: SymbolizedFrame) -> Bool? {
        let subjects = [frame.module, frame.modulePath, frame.file, frame.function].compactMap { $0 }
        guard !subjects.isEmpty else { return nil }
        for pattern in patterns.reversed() {
            let negated = pattern.hasPrefix("!")
            let glob = negated ? String(pattern.dropFirst()) : pattern
            guard !glob.isEmpty else { continue }
            if subjects.contains(where: { GlobPattern.matches(glob, $0) }) { return !negated }
        }
        return nil
    }

    static func defaultDecision(_ frame: SymbolizedFrame) -> Bool? {
        if frame.isPython {
            guard let file = frame.file else { return nil }
            return !isLibraryPython(file: file)
        }
        if frame.isPHP {
            // No script: one of PHP's own functions, written in C (`sleep`, `usort`).
            guard let file = frame.file else { return false }
            return !isLibraryPHP(file: file)
        }
        if frame.isRuby {
            // No script: a method written in C, Ruby's own (`sleep`, `each`).
            guard let file = frame.file else { return false }
            return !isLibraryRuby(file: file)
        }
        if frame.isJavaScript {
            // No script: V8's own JavaScript builtins.
            guard let file = frame.file else { return false }
            return !(file.hasPrefix("node:") || file.contains("/node_modules/"))
        }
        if let function = frame.function, isStandardLibraryFunction(function) { return false }
        if let file = frame.file, file.hasPrefix("/rustc/") || file.contains("/.cargo/registry/") { return false }
        guard let module = frame.module else {
            // JIT code named from a perf map, or nothing at all.
            guard let function = frame.function else { return nil }
            return !isRuntimeJIT(function)
        }
        if SampledFrame.isSystemModule(module) || isRuntimeModule(module) { return false }
        // A Python extension of the interpreter's own (`lib-dynload`, where pyenv keeps it
        // under the user's home) or of an installed package, a Node addon under node_modules.
        if let path = frame.modulePath, isLibraryPython(file: path) || path.contains("/node_modules/") { return false }
        guard isSharedLibrary(module) else { return true }
        // A library of the application's own (a plugin under /opt/app, a build tree) is its
        // code; one the distribution installed is not. Without a path, a library is assumed
        // to be installed.
        guard let path = frame.modulePath else { return false }
        return !systemDirectories.contains(where: path.hasPrefix)
    }

    /// Where Python keeps code that is not the program's own: the standard library, installed
    /// packages, frozen modules (`<frozen importlib._bootstrap>`).
    public static func isLibraryPython(file: String) -> Bool {
        file.hasPrefix("<") || file.contains("/site-packages/") || file.contains("/dist-packages/") || isStandardLibrary(file)
    }

    /// Composer's packages (`vendor/`) and the distribution's PHP libraries.
    public static func isLibraryPHP(file: String) -> Bool {
        file.contains("/vendor/") || file.hasPrefix("/usr/share/php/") || file.hasPrefix("phar://")
    }

    /// Ruby's standard library and builtins written in Ruby, and gems wherever installed.
    public static func isLibraryRuby(file: String) -> Bool {
        file.hasPrefix("<internal:") || file.contains("/lib/ruby/") || file.contains("/gems/")
            || file.contains("/vendor/bundle/") || file.hasPrefix("/usr/share/rubygems")
    }

    /// `…/lib/python3.N/…`, without a regular expression: this runs for every Python frame of
    /// every sample.
    static func isStandardLibrary(_ file: String) -> Bool {
        var rest = Substring(file)
        while let found = rest.range(of: "/lib/python3.") {
            rest = rest[found.upperBound...]
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            if !digits.isEmpty, rest.dropFirst(digits.count).first == "/" { return true }
        }
        return false
    }

    /// Rust's standard library and test harness and C++'s standard library, compiled into the
    /// executable itself (generics, inlined templates) and so in a module of the application's:
    /// `std::thread::sleep` under a `cargo test` test was its culprit. By the first path
    /// segment, also of a trait method's qualified self type (`<core::ops::Range<T> as
    /// …>::next`); `<mycrate::Parser as core::fmt::Debug>::fmt` is the user's.
    static func isStandardLibraryFunction(_ function: String) -> Bool {
        guard function.hasPrefix("<") else { return startsInStandardNamespace(function[...]) }
        let qualified = function.dropFirst()
        // A primitive's trait method (`<u64 as core::iter::range::Step>::forward_unchecked`)
        // is the trait's.
        if let asWord = qualified.range(of: " as "), !qualified[..<asWord.lowerBound].contains("::") {
            return startsInStandardNamespace(qualified[asWord.upperBound...])
        }
        return startsInStandardNamespace(qualified)
    }

    private static func startsInStandardNamespace(_ name: Substring) -> Bool {
        guard let end = name.firstIndex(of: ":"), name[end...].hasPrefix("::") else { return false }
        return standardNamespaces.contains(name[..<end])
    }

    static let standardNamespaces: Set<Substring> = ["std", "core", "alloc", "test", "__gnu_cxx", "__cxxabiv1"]

    static let systemDirectories = ["/usr/", "/lib/", "/lib64/", "/lib32/", "/libx32/", "/snap/", "/nix/store/", "/opt/swift/"]

    /// Interpreters' and event-loop libraries' file names: the same in every program.
    static let runtimeLibraryPrefixes = [
        "libpython", "libnode", "libphp", "libruby", "libperl", "liblua", "libluajit", "libuv", "libv8", "libglib-",
        "libgio-", "libgobject-", "libgthread-", "libevent", "libev.so", "libjvm", "libffi",
    ]

    /// Interpreter executables (`python3.11`, `php-fpm8.2`, `node`), by their whole name: a
    /// program merely named `nodeinfo` is its author's.
    static let interpreterExecutables: Set<Substring> = [
        "python", "pypy", "node", "nodejs", "php", "php-fpm", "php-cgi", "ruby", "perl", "lua", "luajit", "java",
    ]

    public static func isRuntimeModule(_ module: String) -> Bool {
        if isSharedLibrary(module) { return runtimeLibraryPrefixes.contains(where: module.hasPrefix) }
        var name = Substring(module)
        if name.hasSuffix("-dbg") { name = name.dropLast(4) }
        let base = name.prefix { !($0.isNumber || $0 == ".") }
        return interpreterExecutables.contains(base) && name.dropFirst(base.count).allSatisfy { $0.isNumber || $0 == "." }
    }

    static func isSharedLibrary(_ module: String) -> Bool {
        module.hasSuffix(".so") || module.contains(".so.")
    }

    /// Perf-map names of code that belongs to the runtime: Node's own modules and V8's
    /// builtins, stubs and handlers.
    static func isRuntimeJIT(_ function: String) -> Bool {
        function.contains("node:") || function.contains("/node_modules/") || function.hasPrefix("Builtin:")
            || function.hasPrefix("Builtins_") || function.hasPrefix("Stub:") || function.hasPrefix("BytecodeHandler:")
            || function.hasPrefix("Handler:") || function.hasPrefix("RegExp:")
    }
}
