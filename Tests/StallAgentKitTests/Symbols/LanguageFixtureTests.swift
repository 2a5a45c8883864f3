import Foundation
import Testing

/// C++ and Swift programs with namespaces, generics and closures, built at test time: the
/// live stack names them demangled, with lines, and a stripped copy with its debug file by
/// build-id gives the same.
@Suite(.serialized) struct LanguageFixtureTests {
    static let cxx = Result {
        try NativeFixture(name: "cxxfixture") { output in
            try NativeFixture.run("g++", ["-g", "-O1", "-o", output.path, NativeFixture.sourceURL("cxxfixture.cpp").path])
        }
    }
    static let swift = Result {
        try NativeFixture(name: "swiftfixture") { output in
            try NativeFixture.run(
                "swiftc", ["-g", "-O", "-module-name", "swiftfixture", "-o", output.path, NativeFixture.sourceURL("swiftfixture.swift").path])
        }
    }

    func check(_ fixture: NativeFixture, expect names: [String], inlined: String? = nil, file: String) throws {
        let helper = DebugFileTests()
        let frames = try helper.moduleFrames(fixture.unstripped)
        let functions = frames.compactMap(\.function)
        for name in names {
            let frame = try #require(frames.first { $0.function == name }, "\(name) not in \(functions)")
            #expect(frame.file?.hasSuffix(file) == true && frame.line != nil, "\(name)")
            #expect(!frame.approximate)
        }
        if let inlined {
            #expect(frames.contains { $0.inlined.contains { $0.function == inlined } }, "\(frames.map(\.inlined))")
        }
        let stripped = try helper.moduleFrames(fixture.strippedByBuildID, debugDirectories: [fixture.debugDirectory.path])
        #expect(helper.summary(stripped) == helper.summary(frames))
    }

    @Test func cxxNamespacesTemplatesAndLambdas() throws {
        try check(
            try Self.cxx.get(),
            expect: [
                "app::net::Queue<long>::drain(int)::{lambda(int)#1}::operator()(int) const",
                "app::net::Queue<long>::drain(int)", "main",
            ], file: "cxxfixture.cpp")
    }

    @Test func swiftGenericsAndClosures() throws {
        try check(
            try Self.swift.get(),
            expect: ["generic specialization <Swift.Int> of swiftfixture.Server.Worker.drain(fd: Swift.Int32) -> Swift.Int"],
            inlined: "closure #1 (Swift.Int32) -> Swift.Int in swiftfixture.Server.Worker.drain(fd: Swift.Int32) -> Swift.Int",
            file: "swiftfixture.swift")
    }
}
