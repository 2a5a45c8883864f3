import StallSymbols
/// Reads a PHP process's calls from outside, as phpspy does (docs/architecture.md, "PHP
/// frames"): `executor_globals` is exported by the php binary (extensions link against it);
/// its `current_execute_data` is the innermost call, each `zend_execute_data` links to its
/// caller and names its `zend_function` (name, class, script) and, through its `opline`, the
/// line executing. Non-thread-safe builds only (Debian's), PHP 8.2's layout (`PHPLayout`).
///
/// Read with the target running: a call returning meanwhile changes the chain, so it is read
/// until two reads in a row agree on every call and function but the innermost (at most four
/// reads; the last read is kept: `SettledChain`), and every string and line is bounded and
/// checked; a chain that never settles gives no PHP frames and a note.
public final class PHPFrameReader {
    static let maxDepth = 256
    static let maxStringLength = 4096

    /// The module defining `executor_globals` (php-fpm8.2, php8.2, libphp8.2.so).
    public let modulePath: String
    /// "8.2".
    public let version: String
    /// Why the frames of this PHP are not read; nil when they are.
    public let unsupportedNote: String?
    private let layout: PHPLayout?
    private let memory: TargetReader
    private let globals: UInt64
    private var functions: [UInt64: (header: [UInt8], name: String, file: String?)] = [:]

    /// The reader for `modules`' PHP, nil for a process that runs none.
    public init?(pid: Int32, modules: ProcessModules) {
        var found: (module: LoadedModule, globals: Range<UInt64>)?
        for module in modules.modules where module.name.hasPrefix("php") || module.name.hasPrefix("libphp") {
            guard let image = module.image, let range = image.range(ofSymbol: "executor_globals") else { continue }
            found = (module, range)
            break
        }
        guard let (module, range) = found else { return nil }
        modulePath = module.path
        globals = module.bias &+ range.lowerBound
        memory = TargetReader(pid: pid)
        // Debian names its binaries by version (php-fpm8.2, libphp8.2.so); the globals' size
        // tells a build whose layout differs (thread-safe, patched) from the one read.
        let named = module.versionInName
        let size = range.count
        version = named.isEmpty && size == PHPLayout.php82GlobalsSize ? "8.2" : named
        if version == "8.2", size == PHPLayout.php82GlobalsSize {
            layout = .php82
            unsupportedNote = nil
        } else if version == "8.2" {
            layout = nil
            unsupportedNote =
                "PHP 8.2 with \(size)-byte executor globals (not the \(PHPLayout.php82GlobalsSize) of the build read) is not read: native frames only"
        } else {
            layout = nil
            unsupportedNote = "PHP \(version.isEmpty ? "of unknown version" : version) is not read (8.2 is): native frames only"
        }
    }

    /// The calls of the process's PHP thread, innermost first, grouped by `execute_ex`
    /// activation; nil when PHP is not running a script now (a php-fpm worker between requests).
    public func read() -> PHPStack? {
        guard let layout else { return unsupportedNote.map { PHPStack(activations: [], note: $0) } }
        switch SettledChain.read({ chain(layout) }, same: { $0.executeData == $1.executeData && $0.function == $1.function }) {
        case .settled(let calls): return stack(calls, layout)
        case .none: return nil
        case .unsettled: return PHPStack(activations: [], note: "PHP's call chain changed on every read: PHP frames left out")
        }
    }

    private struct Call {
        var executeData: UInt64
        var function: UInt64
        var opline: UInt64
        var callInfo: UInt32
    }

    /// The raw chain: pointers only.
    private func chain(_ layout: PHPLayout) -> [Call]? {
        guard var address = memory.word(globals &+ layout.currentExecuteData), address != 0 else { return nil }
        var calls: [Call] = []
        var seen = Set<UInt64>()
        while address != 0, calls.count < Self.maxDepth, address & 7 == 0, seen.insert(address).inserted {
            guard let block = memory.bytes(address, layout.executeDataSize) else { break }
            let function = TargetReader.word(block, layout.executeFunction)
            let typeInfo = UInt32(bitPattern: TargetReader.int32(block, UInt64(layout.executeThisTypeInfo)))
            // A frame without a function (a VM-internal frame) has no name: skipped.
            if function != 0 {
                calls.append(
                    Call(
                        executeData: address, function: function, opline: TargetReader.word(block, layout.executeOpline),
                        callInfo: typeInfo >> 16))
            }
            address = TargetReader.word(block, layout.executePrevious)
        }
        return calls
    }

    private func stack(_ calls: [Call], _ layout: PHPLayout) -> PHPStack {
        var activations: [[PHPFrame]] = [[]]
        var note: String?
        for call in calls {
            guard let described = describe(call.function, layout) else {
                note = note ?? "a PHP function at 0x\(String(call.function, radix: 16)) was unreadable; frame left out"
                continue
            }
            var line: Int?
            if described.file != nil, let bytes = memory.bytes(call.opline &+ layout.oplineLineno, 4) {
                let value = Int(TargetReader.int32(bytes, 0))
                if value > 0 { line = value }
            }
            activations[activations.count - 1].append(
                PHPFrame(
                    name: described.name, file: described.file, line: line, function: call.function, executeData: call.executeData))
            // Entered from C (`zend_execute`, a callback from an internal function): the calls
            // further out run in an outer activation of the VM.
            if call.callInfo & layout.callTop != 0 { activations.append([]) }
        }
        while activations.last?.isEmpty == true { activations.removeLast() }
        return PHPStack(activations: activations, note: note)
    }

    /// A function's name ("Class::method", "{main}" for a script's top level) and script (nil
    /// for an internal function). Its header is read every time (a freed function's address
    /// can be reused); its strings only when the header changed.
    private func describe(_ function: UInt64, _ layout: PHPLayout) -> (name: String, file: String?)? {
        guard let header = memory.bytes(function, layout.functionHeaderSize) else { return nil }
        if let known = functions[function], known.header == header { return (known.name, known.file) }
        let type = header[0]
        guard type == PHPLayout.internalFunction || type == PHPLayout.userFunction else { return nil }
        let namePointer = TargetReader.word(header, layout.functionName)
        var name = namePointer == 0 ? "{main}" : string(namePointer, layout) ?? "?"
        let scope = TargetReader.word(header, layout.functionScope)
        if namePointer != 0, scope != 0, let className = memory.word(scope &+ layout.className).flatMap({ string($0, layout) }) {
            name = className + "::" + name
        }
        var file: String?
        if type == PHPLayout.userFunction {
            file = string(TargetReader.word(header, layout.functionFilename), layout)
            guard file != nil else { return nil }
        }
        if functions.count > 50_000 { functions.removeAll(keepingCapacity: true) }
        functions[function] = (header, name, file)
        return (name, file)
    }

    /// A `zend_string`'s text (length, then the bytes inline), nil past `maxStringLength`.
    private func string(_ address: UInt64, _ layout: PHPLayout) -> String? {
        guard address != 0, let length = memory.word(address &+ layout.stringLength), length <= Self.maxStringLength,
            let bytes = length == 0 ? [] : memory.bytes(address &+ layout.stringValue, Int(length))
        else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
