import Foundation
import Testing

@testable import StallCapture
@testable import StallSymbols

@Suite struct RustDemanglerTests {
    /// Pairs from rustc-demangle's and libiberty's test suites and from real rustc 1.95
    /// output, in rustc-demangle's alternate form (no hash, no crate disambiguator).
    static let pairs: [(String, String)] = [
        ("_ZN4test17h0123456789abcdefE", "test"),
        ("_ZN11rustfixture11pipe_reader17had99470851ab51c8E", "rustfixture::pipe_reader"),
        ("_ZN3foo3bar17h05af221e174051e9E", "foo::bar"),
        ("_ZN16core..fmt..Debug3fmt17h05af221e174051e9E", "core::fmt::Debug::fmt"),
        ("_ZN4$RP$17h05af221e174051e9E", ")"),
        ("_ZN8$RF$test17h0123456789abcdefE", "&test"),
        ("_ZN13test$u20$test4foob17h0123456789abcdefE", "test test::foob"),
        ("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17hae4d31342b7e61e1E", "std::rt::lang_start::{{closure}}"),
        (
            "_ZN97_$LT$rustfixture..server..queue..Worker$LT$T$GT$$u20$as$u20$rustfixture..server..queue..Drain$GT$9drain_all17hb73977beaec8d1d8E",
            "<rustfixture::server::queue::Worker<T> as rustfixture::server::queue::Drain>::drain_all"
        ),
        ("_ZN3foo3bar17h05af221e174051e9E.llvm.1234", "foo::bar"),
        ("_RNvC6_123foo3bar", "123foo::bar"),
        ("_RNvCs9SbRkQe8GJ2_11rustfixture11pipe_reader", "rustfixture::pipe_reader"),
        (
            "_RNvXNtNtCs9SbRkQe8GJ2_11rustfixture6server5queueINtB2_6WorkermENtB2_5Drain9drain_allB6_",
            "<rustfixture::server::queue::Worker<u32> as rustfixture::server::queue::Drain>::drain_all"
        ),
        ("_RNCNCNgCs6DXkGYLi8lr_2cc5spawn00B5_", "cc::spawn::{closure#0}::{closure#0}"),
        (
            "_RINbNbCskIICzLVDPPb_5alloc5alloc8box_freeDINbNiB4_5boxed5FnBoxuEp6OutputuEL_ECs1iopQbuBiw2_3std",
            "alloc::alloc::box_free::<dyn alloc::boxed::FnBox<(), Output = ()>>"
        ),
        ("_RINvNtC3std3mem8align_ofjE", "std::mem::align_of::<usize>"),
        ("_RINvNtC3std3mem8align_ofFUKCRL_mEuE", "std::mem::align_of::<unsafe extern \"C\" fn(&u32)>"),
        ("_RINvCs1_3foo3barKj2a_E", "foo::bar::<42>"),
        // A named lifetime goes between `&` and `mut`, as rustc and c++filt print it.
        ("_RINvNtC3std3mem8align_ofFG0_QL0_mEuE", "std::mem::align_of::<for<'a, 'b> fn(&'b mut u32)>"),
    ]

    @Test func knownPairs() {
        for (mangled, expected) in Self.pairs {
            #expect(RustDemangler.demangle(mangled) == expected, "\(mangled)")
        }
    }

    @Test func cxxAndSwiftNamesAreNotClaimed() {
        #expect(RustDemangler.demangle("_ZN3foo3barEv") == nil)
        #expect(RustDemangler.demangle("_ZN3foo3bar17h05af221e174051eE") == nil)  // 15 hex digits
        #expect(RustDemangler.demangle("$s4main3fooyyF") == nil)
        #expect(Demangler.demangle("_ZN3foo3barEv") == "foo::bar()")
        #expect(Demangler.demangle("_RNvC6_123foo3bar") == "123foo::bar")
    }

    @Test func malformedV0IsRejected() {
        for bad in [
            "_R", "_RN", "_RNvC", "_RNvC3fo", "_RB_", "_RNvB0_3foo", "_RC3fooQ", "_RC99999999999999999999foo", "_RINvCs1_3foo3barKbn1_E",
            "_ZN4testE17h0123456789abcdefE",
        ] {
            #expect(RustDemangler.demangle(bad) == nil, "\(bad)")
        }
    }

    /// A backreference loop or exponential expansion must end quickly with nil or bounded text.
    @Test func backreferenceBombIsBounded() {
        var name = "_RINvC3foo3bar"
        for _ in 0..<40 { name += "TB0_B0_E" }
        let start = Date()
        let result = RustDemangler.demangle(name + "E")
        #expect(Date().timeIntervalSince(start) < 2)
        #expect((result?.utf8.count ?? 0) <= RustDemangler.maxOutput)
    }

    /// Fixed-seed mutation fuzzing of both manglings: no crash, no hang, bounded output.
    @Test func mutatedNamesNeverCrash() {
        var rng = SplitMix64(seed: 0x5eed_0006)
        let seeds = Self.pairs.map(\.0)
        let alphabet = Array("_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ$.".utf8)
        let deadline = Date().addingTimeInterval(3)
        var count = 0
        while Date() < deadline && count < 50_000 {
            var bytes = Array(seeds[Int(rng.next() % UInt64(seeds.count))].utf8)
            for _ in 0..<(1 + rng.next() % 4) {
                let position = Int(rng.next() % UInt64(bytes.count + 1))
                switch rng.next() % 3 {
                case 0 where position < bytes.count: bytes[position] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                case 1: bytes.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: position)
                default: if position < bytes.count { bytes.remove(at: position) }
                }
            }
            let result = RustDemangler.demangle(String(decoding: bytes, as: UTF8.self))
            #expect((result?.utf8.count ?? 0) <= RustDemangler.maxOutput + 64)
            count += 1
        }
        #expect(count > 100)
    }
}

/// A small deterministic generator for the fuzz tests (the system one cannot be seeded).
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
