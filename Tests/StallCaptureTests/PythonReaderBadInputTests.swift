import Foundation
import Testing

@testable import StallCapture

@testable import StallSymbols
#if canImport(Glibc)
import Glibc
#endif

/// Broken interpreter state, laid out in this process's own memory in 3.12's layout and read
/// back with process_vm_readv as from a target: loops, pointers into unmapped memory, a code
/// object cut off by an unmapped page, garbage strings, a chain too deep. Each gives the
/// frames that can be read and a note, and returns promptly.
@Suite struct PythonReaderBadInputTests {
    let layout = PythonLayout.builtIn(major: 3, minor: 12)!

    /// 16 pages of scratch memory, the last one unmapped.
    final class Arena {
        let base: UInt64
        let size = 16 * 4096
        var next: UInt64

        init() {
            let pointer = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)!
            base = UInt64(UInt(bitPattern: pointer))
            munmap(UnsafeMutableRawPointer(bitPattern: UInt(base) + UInt(size - 4096)), 4096)
            next = base
        }

        deinit { munmap(UnsafeMutableRawPointer(bitPattern: UInt(base)), size - 4096) }

        var unmapped: UInt64 { base + UInt64(size - 4096) }

        func allocate(_ bytes: Int) -> UInt64 {
            let address = next
            next += UInt64((bytes + 15) & ~15)
            return address
        }

        func put(_ address: UInt64, _ value: UInt64) {
            UnsafeMutableRawPointer(bitPattern: UInt(address))!.storeBytes(of: value, as: UInt64.self)
        }

        func put32(_ address: UInt64, _ value: UInt32) {
            UnsafeMutableRawPointer(bitPattern: UInt(address))!.storeBytes(of: value, as: UInt32.self)
        }

        func putByte(_ address: UInt64, _ value: UInt8) {
            UnsafeMutableRawPointer(bitPattern: UInt(address))!.storeBytes(of: value, as: UInt8.self)
        }

        /// A compact ASCII str in 3.12's layout.
        func string(_ text: String, state: UInt32 = 0b110_0100, length: Int? = nil) -> UInt64 {
            let bytes = Array(text.utf8)
            let address = allocate(40 + bytes.count + 1)
            put(address + 16, UInt64(length ?? bytes.count))
            put32(address + 32, state)
            for (i, byte) in bytes.enumerated() { putByte(address + 40 + UInt64(i), byte) }
            return address
        }

        func bytesObject(_ bytes: [UInt8]) -> UInt64 {
            let address = allocate(32 + bytes.count)
            put(address + 16, UInt64(bytes.count))
            for (i, byte) in bytes.enumerated() { putByte(address + 32 + UInt64(i), byte) }
            return address
        }
    }

    /// A runtime → interpreter → thread state of this thread (`getpid()`: the main thread of
    /// the test process) → cframe → `first`.
    func reader(_ arena: Arena, first: UInt64) -> PythonFrameReader {
        let runtime = arena.allocate(64)
        let interpreter = arena.allocate(128)
        let state = arena.allocate(256)
        let cframe = arena.allocate(16)
        arena.put(runtime + layout.runtimeInterpretersHead, interpreter)
        arena.put(interpreter + layout.interpreterThreadsHead, state)
        arena.put(state + layout.threadNext, 0)
        arena.put(state + layout.threadNativeID, UInt64(getpid()))
        arena.put(state + layout.threadFrame, cframe)
        arena.put(cframe + layout.cframeCurrentFrame!, first)
        return PythonFrameReader(pid: getpid(), layout: layout, runtime: runtime)
    }

    func frame(_ arena: Arena, code: UInt64, previous: UInt64 = 0, unit: Int = 0, owner: UInt8 = 0) -> UInt64 {
        let address = arena.allocate(80)
        arena.put(address + layout.frameCode, code)
        arena.put(address + layout.framePrevious, previous)
        arena.put(address + layout.frameInstruction, code + layout.codeAdaptive + UInt64(unit * 2))
        arena.putByte(address + layout.frameOwner, owner)
        return address
    }

    /// A code object named `name` in file.py, first line 10; its line table says unit 0 is
    /// line 10 and units 1–2 are line 12.
    func code(_ arena: Arena, name: UInt64? = nil) -> UInt64 {
        let name = name ?? arena.string("handler")
        let file = arena.string("/srv/file.py")
        // Short form (kind 0, 1 unit, same line), then one-line form +2 (kind 12, 2 units).
        let table = arena.bytesObject([0x80, 0x00, 0x80 | (12 << 3) | 1, 0x00, 0x00])
        let code = arena.allocate(256)
        arena.put(code + layout.codeName, name)
        arena.put(code + layout.codeQualname, name)
        arena.put(code + layout.codeFilename, file)
        arena.put(code + layout.codeLinetable, table)
        arena.put32(code + layout.codeFirstLineNumber, 10)
        return code
    }

    @Test func aWellFormedChainIsNamedWithLines() {
        let arena = Arena()
        let outer = frame(arena, code: code(arena, name: arena.string("outer")), unit: 0)
        let shim = frame(arena, code: 0, previous: outer, owner: PythonLayout.ownedByCStack)
        let inner = frame(arena, code: code(arena), previous: shim, unit: 2)
        let r = reader(arena, first: inner)
        let chain = r.readChain(tid: getpid())
        #expect(chain?.frames.count == 3)
        #expect(chain?.note == nil)
        let stack = r.resolve(chain!)
        #expect(stack.activations.map { $0.map(\.qualifiedName) } == [["handler"], ["outer"]])
        #expect(stack.activations.first?.first?.line == 12)
        #expect(stack.activations.last?.first?.line == 10)
        #expect(stack.activations.first?.first?.file == "/srv/file.py")
    }

    @Test func aLoopingChainStops() {
        let arena = Arena()
        let c = code(arena)
        let a = frame(arena, code: c)
        let b = frame(arena, code: c, previous: a)
        arena.put(a + layout.framePrevious, b)
        let chain = reader(arena, first: b).readChain(tid: getpid())
        #expect(chain?.frames.count == 2)
        #expect(chain?.note?.contains("loops") == true)
    }

    @Test func aChainIntoUnmappedMemoryStops() {
        let arena = Arena()
        let a = frame(arena, code: code(arena), previous: arena.unmapped + 64)
        let r = reader(arena, first: a)
        let chain = r.readChain(tid: getpid())
        #expect(chain?.frames.count == 1)
        #expect(chain?.note?.contains("outside memory") == true)
        #expect(r.resolve(chain!).activations.first?.count == 1)
    }

    @Test func aTooDeepChainIsCut() {
        let arena = Arena()
        let c = code(arena)
        var previous: UInt64 = 0
        for _ in 0..<300 { previous = frame(arena, code: c, previous: previous) }
        let chain = reader(arena, first: previous).readChain(tid: getpid())
        #expect(chain?.frames.count == PythonFrameReader.maxDepth)
        #expect(chain?.note?.contains("deeper") == true)
    }

    @Test func aTruncatedCodeObjectIsLeftOutWithANote() {
        let arena = Arena()
        // The code object's header runs into the unmapped page (its fields there cannot even
        // be written).
        let cut = arena.unmapped - 64
        let good = frame(arena, code: code(arena, name: arena.string("caller")))
        let bad = frame(arena, code: cut, previous: good)
        let r = reader(arena, first: bad)
        let stack = r.resolve(r.readChain(tid: getpid())!)
        #expect(stack.activations.flatMap { $0 }.map(\.qualifiedName) == ["caller"])
        #expect(stack.note?.contains("unreadable") == true)
    }

    @Test func garbageStringsAreRefusedOrBounded() {
        let arena = Arena()
        // Kind 3 does not exist; a non-compact string is not what code objects hold.
        let badKind = frame(arena, code: code(arena, name: arena.string("x", state: 3 << 2 | 1 << 5)))
        let notCompact = frame(arena, code: code(arena, name: arena.string("x", state: 1 << 2)), previous: badKind)
        let huge = frame(arena, code: code(arena, name: arena.string("y", length: 1 << 40)), previous: notCompact)
        let long = frame(arena, code: code(arena, name: arena.string(String(repeating: "z", count: 3000))), previous: huge)
        let r = reader(arena, first: long)
        let names = r.resolve(r.readChain(tid: getpid())!).activations.flatMap { $0 }.map(\.qualifiedName)
        #expect(names.count == 1)
        #expect(names.first?.count == PythonFrameReader.maxStringLength + 1)
        #expect(names.first?.hasSuffix("…") == true)
    }

    @Test func noThreadStateMeansNoFramesAndANote() {
        let arena = Arena()
        let r = reader(arena, first: 0)
        #expect(r.readChain(tid: getpid())?.frames.isEmpty == true)
        // Another thread of the process that never ran Python: nothing, not even a note.
        #expect(r.readChain(tid: getpid() + 1_000_000) == nil)
    }

    @Test func debugOffsetsOfAnUnknownVersionOrGarbageAreRefused() {
        var block = [UInt8](repeating: 0, count: 584)
        for (i, byte) in "xdebugpy".utf8.enumerated() { block[i] = byte }
        // 3.14.0: another _Py_DebugOffsets layout.
        block[8 + 3] = 3
        block[8 + 2] = 14
        let unknown = PythonLayout.fromDebugOffsets(block)
        #expect(unknown.layout == nil)
        #expect(unknown.version.map { "\($0.0).\($0.1)" } == "3.14")
        // 3.13 with absurd offsets.
        block[8 + 2] = 13
        for i in stride(from: 24, to: 584, by: 8) {
            block[i] = 0xff
            block[i + 5] = 0xff
        }
        #expect(PythonLayout.fromDebugOffsets(block).layout == nil)
        #expect(PythonLayout.fromDebugOffsets([UInt8](repeating: 0x41, count: 584)).layout == nil)
        #expect(PythonLayout.builtIn(major: 3, minor: 10) == nil)
        #expect(PythonLayout.builtIn(major: 3, minor: 14) == nil)
    }

    @Test func aProcessWithoutCPythonHasNoReader() throws {
        let modules = try ProcessModules(pid: getpid())
        #expect(PythonFrameReader(pid: getpid(), modules: modules) == nil)
    }
}
