import ReportTestSupport
import Testing

@testable import StallCapture
@testable import StallReports
@testable import StallSymbols

/// Issue 26: which frames are the application's own, and what the culprit names with them.
@Suite struct AppFrameRuleTests {
    static func native(_ function: String?, _ module: String?, path: String? = nil) -> SymbolizedFrame {
        SymbolizedFrame(
            index: 0, address: 0x1000, stackPointer: 0, module: module, modulePath: path, buildId: nil, moduleOffset: 0x10,
            function: function, functionOffset: 4, approximate: false)
    }

    static func python(_ function: String, _ file: String) -> SymbolizedFrame {
        SymbolizedFrame(
            index: 0, address: 0x2000, stackPointer: 0, module: SymbolizedFrame.pythonModule, modulePath: nil, buildId: nil,
            moduleOffset: nil, function: function, functionOffset: nil, approximate: false, file: file, line: 3,
            language: SymbolizedFrame.pythonLanguage)
    }

    static func javascript(_ name: String, _ script: String?) -> SymbolizedFrame {
        SymbolizedFrame(
            javascript: JavaScriptFrame(name: name, script: script, line: 11, shared: 0x3001), index: 0,
            frame: UnwoundFrame(address: 0x1000, stackPointer: 0, isSignalFrame: false))
    }

    /// JavaScript functions read from V8: the script's own, not Node's (`node:`), installed
    /// packages' or V8's builtins (no script); the culprit is the handler, not `execSync`.
    @Test func javascriptFramesAreTheScriptsOwn() {
        let rule = AppFrameRule()
        #expect(rule.isApp(Self.javascript("blockExec", "/srv/app/node_server.js")) == true)
        #expect(rule.isApp(Self.javascript("main", "file:///srv/app/main.mjs")) == true)
        #expect(rule.isApp(Self.javascript("execSync", "node:child_process")) == false)
        #expect(rule.isApp(Self.javascript("query", "/srv/app/node_modules/pg/lib/client.js")) == false)
        #expect(rule.isApp(Self.javascript("PromiseFulfillReactionJob", nil)) == false)
        let handler = Self.javascript("blockExec", "/srv/app/node_server.js")
        #expect(handler.displayName == "blockExec" && handler.isScript && !handler.isPython)
        #expect(StackTextRenderer.moduleColumn(handler) == "[js]")
    }

    /// Ruby frames read from the VM: the scripts' own methods and blocks, not C methods (no
    /// script), Ruby's library or builtins, or gems wherever they are installed.
    @Test func rubyFramesAreTheScriptsOwn() {
        func ruby(_ name: String, _ file: String?) -> SymbolizedFrame {
            SymbolizedFrame(ruby: RubyFrame(name: name, file: file, line: file == nil ? nil : 5, code: 0x4000, controlFrame: 0), index: 0)
        }
        let rule = AppFrameRule()
        #expect(rule.isApp(ruby("slow_handler", "/srv/app/server.rb")) == true)
        #expect(rule.isApp(ruby("block in serve", "server.rb")) == true)
        #expect(rule.isApp(ruby("sleep", nil)) == false)
        #expect(rule.isApp(ruby("accept", "/usr/lib/ruby/3.1.0/socket.rb")) == false)
        #expect(rule.isApp(ruby("loop", "<internal:kernel>")) == false)
        #expect(rule.isApp(ruby("call", "/var/lib/gems/3.1.0/gems/rack-3.0.8/lib/rack/builder.rb")) == false)
        #expect(rule.isApp(ruby("call", "/srv/app/vendor/bundle/ruby/3.1.0/gems/puma-6.4.0/lib/puma/server.rb")) == false)
        let handler = ruby("slow_handler", "/srv/app/server.rb")
        #expect(handler.displayName == "slow_handler" && handler.isScript && handler.isRuby && !handler.isPHP)
        #expect(StackTextRenderer.moduleColumn(handler) == "[ruby]")
    }

    @Test func defaultsTellTheProgramFromItsRuntime() {
        let rule = AppFrameRule()
        #expect(rule.isApp(Self.native("run_sleep", "glib_handler", path: "/tmp/glib_handler")) == true)
        #expect(rule.isApp(Self.native("pg_sleep", "postgres", path: "/usr/lib/postgresql/15/bin/postgres")) == true)
        #expect(rule.isApp(Self.native("clock_nanosleep", "libc.so.6", path: "/usr/lib/x86_64-linux-gnu/libc.so.6")) == false)
        #expect(rule.isApp(Self.native("g_usleep", "libglib-2.0.so.0.7400.6", path: "/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0.7400.6")) == false)
        #expect(rule.isApp(Self.native("SSL_read", "libssl.so.3", path: "/usr/lib/x86_64-linux-gnu/libssl.so.3")) == false)
        // A plugin of the application's own, outside the system's directories, is its code.
        #expect(rule.isApp(Self.native("filter", "libmyplugin.so", path: "/opt/app/lib/libmyplugin.so")) == true)
        // Not an interpreter's extension outside the system's directories (pyenv's, a venv's).
        let pyenv = "/root/.pyenv/versions/3.11.7/lib/python3.11/lib-dynload/_asyncio.cpython-311-x86_64-linux-gnu.so"
        #expect(rule.isApp(Self.native("task_step_impl", "_asyncio.cpython-311-x86_64-linux-gnu.so", path: pyenv)) == false)
        let parser = "/srv/venv/lib/python3.11/site-packages/aiohttp/_http_parser.cpython-311-x86_64-linux-gnu.so"
        #expect(rule.isApp(Self.native("cb_on_body", "_http_parser.cpython-311-x86_64-linux-gnu.so", path: parser)) == false)
        #expect(rule.isApp(Self.native("Hash", "bcrypt_lib.node", path: "/srv/app/node_modules/bcrypt/build/bcrypt_lib.node")) == false)
        #expect(rule.isApp(Self.native("_PyEval_EvalFrameDefault", "python3.11")) == false)
        #expect(rule.isApp(Self.native("uv_run", "node")) == false)
        #expect(rule.isApp(Self.native("worker", "php-fpm8.2")) == false)
        #expect(rule.isApp(Self.native("rb_vm_exec", "libruby-3.1.so.3.1.2", path: "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.2")) == false)
        #expect(rule.isApp(Self.native("main", "nodeinfo")) == true)
        #expect(rule.isApp(Self.python("refresh_inventory", "/srv/app/app.py")) == true)
        #expect(rule.isApp(Self.python("_try_wait", "/usr/lib/python3.11/subprocess.py")) == false)
        #expect(rule.isApp(Self.python("get", "/srv/venv/lib/python3.11/site-packages/requests/api.py")) == false)
        #expect(rule.isApp(Self.python("_find_and_load", "<frozen importlib._bootstrap>")) == false)
        // JIT code from a perf map: the script's, not Node's own modules.
        #expect(rule.isApp(Self.native("JS:*blockExec /srv/node_server.js:13", nil)) == true)
        #expect(rule.isApp(Self.native("JS:~spawnSync node:internal/child_process:1108:19", nil)) == false)
        #expect(rule.isApp(Self.native(nil, nil)) == nil)
    }

    @Test func userPatternsDecideAndTheLastMatchWins() {
        let rule = AppFrameRule(patterns: ["*/vendor/*", "!*/vendor/slowlib/*", "libmine.so*"])
        #expect(rule.isApp(Self.python("call", "/srv/app/vendor/client.py")) == true)
        #expect(rule.isApp(Self.python("call", "/srv/app/vendor/slowlib/x.py")) == false)
        #expect(rule.isApp(Self.native("f", "libmine.so.1", path: "/usr/lib/libmine.so.1")) == true)
        #expect(rule.isApp(Self.native("run_sleep", "glib_handler")) == true)
    }

    @Test func theCulpritIsTheInnermostAppFrame() {
        var libc = Self.native("clock_nanosleep", "libc.so.6")
        libc.inApp = false
        var glib = Self.native("g_usleep", "libglib-2.0.so.0")
        glib.inApp = false
        var handler = Self.native("run_sleep", "glib_handler")
        handler.inApp = true
        #expect(StallReport.culprit(in: [libc, glib, handler])?.function == "run_sleep")
    }

    /// A stack with no frame of the application's keeps the culprit it had before the rule.
    @Test func withoutAnAppFrameTheCulpritIsUnchanged() {
        var libc = Self.native("clock_nanosleep", "libc.so.6")
        libc.inApp = false
        var glib = Self.native("g_usleep", "libglib-2.0.so.0")
        glib.inApp = false
        #expect(StallReport.culprit(in: [libc, glib])?.function == "g_usleep")
        libc.inApp = nil
        glib.inApp = nil
        #expect(StallReport.culprit(in: [libc, glib])?.function == "g_usleep")
    }

    /// Rust's standard library and test harness, compiled into the test binary itself, are not
    /// the application's; a trait method is its self type's (or, for a primitive, the trait's).
    @Test func standardLibrariesInTheExecutableAreNotTheApplications() {
        let rule = AppFrameRule()
        let binary = "slowtests-b7db332bf311b43f"
        let path = "/srv/app/target/debug/deps/\(binary)"
        for library in [
            "std::thread::functions::sleep", "core::ops::function::FnOnce::call_once",
            "test::run_test::{closure#0}", "<u64 as core::iter::range::Step>::forward_unchecked",
            "<core::ops::range::Range<T> as core::iter::range::RangeIteratorImpl>::spec_next",
            "<std::sys::thread::unix::Thread>::new::thread_start", "std::__introsort_loop<int*>",
        ] {
            #expect(rule.isApp(Self.native(library, binary, path: path)) == false, "\(library)")
        }
        for own in ["slowtests::helper", "slowtests::tests::test_spin::{{closure}}", "<slowtests::Parser as core::fmt::Debug>::fmt", "stdlib_shim"] {
            #expect(rule.isApp(Self.native(own, binary, path: path)) == true, "\(own)")
        }
    }

    /// Hypothesis runs every example of a test through its own `ConjectureRunner.test_function`
    /// (site-packages): named like a test, it is not the test (attrs' suite: six stalls read
    /// `ConjectureRunner.test_function → simple_classes`).
    @Test func aLibraryFunctionNamedLikeATestIsNotTheTest() {
        var frames = [
            Self.python("simple_classes", "/src/attrs/tests/strategies.py"),
            Self.python("ConjectureRunner.test_function", "/venv/lib/python3.11/site-packages/hypothesis/internal/conjecture/engine.py"),
            Self.python("accept.<locals>.test_recurse_property", "/src/attrs/tests/test_funcs.py"),
        ]
        for index in frames.indices { frames[index].inApp = AppFrameRule().isApp(frames[index]) }
        var report = StallReport(snapshot: ReportFixtures.hangEnded(), context: ReportFixtures.context())
        report.heaviestStack = ReportHeaviestStack(samples: 3, totalSamples: 3, frames: frames)
        #expect(report.culpritName == "accept.<locals>.test_recurse_property → simple_classes")
    }

    /// A Rust test that spent its time in a helper is named by both, as a Python one is.
    @Test func aNativeTestAboveItsHelperIsNamedByBoth() {
        let binary = "slowtests"
        var frames = [
            Self.native("slowtests::helper", binary, path: "/srv/slowtests"),
            Self.native("slowtests::tests::test_spin", binary, path: "/srv/slowtests"),
            Self.native("core::ops::function::FnOnce::call_once", binary, path: "/srv/slowtests"),
        ]
        for index in frames.indices { frames[index].inApp = AppFrameRule().isApp(frames[index]) }
        #expect(StallReport.culprit(in: frames)?.function == "slowtests::helper")
        var report = StallReport(snapshot: ReportFixtures.hangEnded(), context: ReportFixtures.context())
        report.heaviestStack = ReportHeaviestStack(samples: 3, totalSamples: 3, frames: frames)
        #expect(report.culpritName == "slowtests::tests::test_spin → slowtests::helper")
        report.heaviestStack?.frames.removeFirst()
        #expect(report.culpritName == "slowtests::tests::test_spin")
    }
}
