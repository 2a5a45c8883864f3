import Foundation
import StallSymbols

/// Where V8 keeps what naming a JavaScript frame needs, read from the `v8dbg_*` postmortem
/// symbols that Node binaries export (llnode and the OpenTelemetry eBPF profiler read frames
/// the same way). Each symbol is an `int` in the binary's data: nothing is read from the
/// process. Checked on Node 20 (V8 11.3) and Node 24 (V8 13.6), whose names differ in a few
/// places (`…__Tagged_…` suffixes); a binary missing any required constant gives no layout,
/// and its frames stay as they were.
///
/// Not exported, and so written here per version (docs/architecture.md, "JavaScript frames"):
/// the ScopeInfo's variable part, where a compiled function keeps its name and position.
struct V8Layout: Sendable, Equatable {
    var heapObjectMap: Int
    var mapInstanceType: Int
    var frameContext: Int
    var frameFunction: Int
    var functionShared: Int
    var functionTypes: ClosedRange<Int>
    var sharedNameOrScopeInfo: Int
    var sharedScript: Int
    var sharedFunctionData: Int?
    var sharedType: Int
    var scopeInfoType: Int
    var uncompiledDataTypes: ClosedRange<Int>?
    var uncompiledInferredName: Int
    var uncompiledStartPosition: Int
    var scopeInfoContextLocals: Int
    var scopeInfoFirstVariables: Int
    /// Where a Script keeps its name, source and line ends (a FixedArray of Smis).
    var script: Script
    struct Script: Sendable, Equatable {
        var scriptType: Int
        var scriptName: Int
        var scriptSource: Int
        var scriptLineEnds: Int
        var fixedArrayType: Int
        var fixedArrayLength: Int
        var fixedArrayData: Int
    }
    /// How a String is laid out: its length, each representation's fields and the
    /// instance-type bits that tell the representations and encodings apart.
    var strings: Strings
    struct Strings: Sendable, Equatable {
        var stringLength: Int
        var seqOneByteChars: Int
        var seqTwoByteChars: Int
        var consFirst: Int
        var consSecond: Int
        var slicedParent: Int
        var slicedOffset: Int
        var thinActual: Int
        var externalResource: Int
        var firstNonStringType: Int
        var representationMask: Int
        var encodingMask: Int
        var oneByteTag: Int
        var seqTag: Int
        var consTag: Int
        var externalTag: Int
        var slicedTag: Int
        var thinTag: Int
    }
    /// Where an interpreted frame keeps its BytecodeArray and the offset of the bytecode it
    /// is at (a Smi, counted from the array's tagged address), and how that offset maps to a
    /// source position: nil when the binary does not say (the line is then the definition's).
    var executingLine: ExecutingLine?
    struct ExecutingLine: Sendable, Equatable {
        var frameBytecodeArray: Int
        var frameBytecodeOffset: Int
        var bytecodeArrayType: Int
        var bytecodeArrayData: Int
        /// BytecodeArray's source position table: not exported, so per version: after map,
        /// length, constant pool and handler table in V8 11 (32); after map, length and wrapper
        /// in V8 12.x–13 (24), which moved the array to trusted space.
        var sourcePositionTable: Int
        /// ByteArray (V8 11) or TrustedByteArray (13): the table's own type.
        var tableTypes: Set<Int>
        var byteArrayLength: Int
        /// Map and length: where a byte array's bytes start.
        var byteArrayData: Int
    }
    /// V8 12.8 moved the ScopeInfo's flags to a raw 32-bit field and its position to fixed
    /// slots (`scopeinfo_idx_first_vars` went from 3 to 5).
    var scopeInfoFixedPosition: Bool

    /// The layout of the V8 in `image`, nil when it exports no postmortem metadata or lacks a
    /// constant; pointer compression (tagged values of 4 bytes) is not read. `refusal` says why
    /// a binary that does export the metadata gives no layout.
    init?(image: ElfImage, refusal: inout String?) {
        // One pass over the symbol tables (node has 110 000 symbols): every constant by name.
        guard let elf = image.elf else { return nil }
        var addresses: [String: UInt64] = [:]
        // Each constant is an `int` object (STT_OBJECT = 1): only those names are read, from
        // one table.
        ElfSymbolTable.forEachSymbol(in: elf, including: { $0.st_size == 4 && $0.st_info & 0xf == 1 }, preferringSymtab: true) {
            symbol, name, _ in
            if strncmp(name, "v8dbg_", 6) == 0 { addresses[String(cString: name + 6)] = symbol.st_value }
            return true
        }
        guard !addresses.isEmpty else { return nil }
        func constant(_ names: String...) -> Int? {
            for name in names {
                guard let address = addresses[name] else { continue }
                // A constant that is 0 lives in .bss: in memory, not in the file.
                guard let bytes = image.readBytes(atVirtualAddress: address, count: 4) else {
                    let inBss = image.segments.contains {
                        address >= $0.virtualAddress + $0.fileSize && address + 4 <= $0.virtualAddress + $0.memorySize
                    }
                    if inBss { return 0 }
                    continue
                }
                return Int(Int32(bitPattern: UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24))
            }
            return nil
        }
        if constant("TaggedSize") == 4 {
            refusal = "V8 built with pointer compression (4-byte tagged values) is not read: JavaScript functions are not named"
            return nil
        }
        refusal = "this V8's postmortem metadata lacks a constant stallagent needs: JavaScript functions are not named"
        guard constant("TaggedSize") == 8, constant("SmiShiftSize") == 31, constant("HeapObjectTag") == 1,
            let heapObjectMap = constant("class_HeapObject__map__Map"),
            let mapInstanceType = constant("class_Map__instance_type__uint16_t"),
            let frameContext = constant("off_fp_context", "off_fp_context_or_frame_type"),
            let frameFunction = constant("off_fp_function"),
            let functionShared = constant("class_JSFunction__shared__SharedFunctionInfo"),
            let firstFunctionType = constant("FirstJSFunctionType", "type_JSFunction__JS_FUNCTION_TYPE"),
            let sharedNameOrScopeInfo = constant(
                "class_SharedFunctionInfo__name_or_scope_info__Object",
                "class_SharedFunctionInfo__name_or_scope_info__Tagged_NameOrScopeInfoT_"),
            let sharedScript = constant(
                "class_SharedFunctionInfo__script_or_debug_info__HeapObject",
                "class_SharedFunctionInfo__script__Tagged_HeapObject_"),
            let sharedType = constant("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE"),
            let scopeInfoType = constant("type_ScopeInfo__SCOPE_INFO_TYPE"),
            let scriptType = constant("type_Script__SCRIPT_TYPE"),
            let fixedArrayType = constant("type_FixedArray__FIXED_ARRAY_TYPE"),
            let uncompiledInferredName = constant("class_UncompiledData__inferred_name__String"),
            let uncompiledStartPosition = constant("class_UncompiledData__start_position__int32_t"),
            let scopeInfoContextLocals = constant("scopeinfo_idx_ncontextlocals"),
            let scopeInfoFirstVariables = constant("scopeinfo_idx_first_vars"),
            let scriptName = constant("class_Script__name__Object"),
            let scriptSource = constant("class_Script__source__Object"),
            let scriptLineEnds = constant("class_Script__line_ends__Object"),
            let fixedArrayLength = constant("class_FixedArrayBase__length__SMI"),
            let fixedArrayData = constant("class_FixedArray__data__uintptr_t"),
            let stringLength = constant("class_String__length__int32_t"),
            let seqOneByteChars = constant("class_SeqOneByteString__chars__char"),
            let seqTwoByteChars = constant("class_SeqTwoByteString__chars__char"),
            let consFirst = constant("class_ConsString__first__String"),
            let consSecond = constant("class_ConsString__second__String"),
            let slicedParent = constant("class_SlicedString__parent__String"),
            let slicedOffset = constant("class_SlicedString__offset__SMI"),
            let thinActual = constant("class_ThinString__actual__String"),
            let externalResource = constant("class_ExternalString__resource__Object"),
            let firstNonStringType = constant("FirstNonstringType"),
            let representationMask = constant("StringRepresentationMask"),
            let encodingMask = constant("StringEncodingMask"),
            let oneByteTag = constant("OneByteStringTag"),
            let seqTag = constant("SeqStringTag"), let consTag = constant("ConsStringTag"),
            let externalTag = constant("ExternalStringTag"), let slicedTag = constant("SlicedStringTag"),
            let thinTag = constant("ThinStringTag"),
            [3, 5].contains(scopeInfoFirstVariables)
        else { return nil }
        self.heapObjectMap = heapObjectMap
        self.mapInstanceType = mapInstanceType
        self.frameContext = frameContext
        self.frameFunction = frameFunction
        self.functionShared = functionShared
        // V8 11 exports only the first JSFunction type; its subclasses (class constructors,
        // bound-like functions of each kind) follow it, 15 in all (the OpenTelemetry
        // profiler's range).
        functionTypes = firstFunctionType...(constant("LastJSFunctionType") ?? firstFunctionType + 14)
        self.sharedNameOrScopeInfo = sharedNameOrScopeInfo
        self.sharedScript = sharedScript
        sharedFunctionData = constant("class_SharedFunctionInfo__function_data__Object")
        self.sharedType = sharedType
        self.scopeInfoType = scopeInfoType
        if let first = constant(
            "type_UncompiledDataWithoutPreparseData__UNCOMPILED_DATA_WITHOUT_PREPARSE_DATA_TYPE",
            "type_UncompiledDataWithPreparseData__UNCOMPILED_DATA_WITH_PREPARSE_DATA_TYPE"),
            let last = constant(
                "type_UncompiledDataWithoutPreparseDataWithJob__UNCOMPILED_DATA_WITHOUT_PREPARSE_DATA_WITH_JOB_TYPE")
        {
            uncompiledDataTypes = min(first, last - 3)...last
        }
        self.uncompiledInferredName = uncompiledInferredName
        self.uncompiledStartPosition = uncompiledStartPosition
        self.scopeInfoContextLocals = scopeInfoContextLocals
        self.scopeInfoFirstVariables = scopeInfoFirstVariables
        script = Script(
            scriptType: scriptType,
            scriptName: scriptName,
            scriptSource: scriptSource,
            scriptLineEnds: scriptLineEnds,
            fixedArrayType: fixedArrayType,
            fixedArrayLength: fixedArrayLength,
            fixedArrayData: fixedArrayData)
        strings = Strings(
            stringLength: stringLength,
            seqOneByteChars: seqOneByteChars,
            seqTwoByteChars: seqTwoByteChars,
            consFirst: consFirst,
            consSecond: consSecond,
            slicedParent: slicedParent,
            slicedOffset: slicedOffset,
            thinActual: thinActual,
            externalResource: externalResource,
            firstNonStringType: firstNonStringType,
            representationMask: representationMask,
            encodingMask: encodingMask,
            oneByteTag: oneByteTag,
            seqTag: seqTag,
            consTag: consTag,
            externalTag: externalTag,
            slicedTag: slicedTag,
            thinTag: thinTag)
        scopeInfoFixedPosition = scopeInfoFirstVariables == 5
        refusal = nil
        if let frameBytecodeArray = constant("off_fp_bytecode_array"), let frameBytecodeOffset = constant("off_fp_bytecode_offset"),
            let bytecodeArrayType = constant("type_BytecodeArray__BYTECODE_ARRAY_TYPE"),
            let bytecodeArrayData = constant("class_BytecodeArray__data__uintptr_t"),
            let byteArrayType = constant("type_ByteArray__BYTE_ARRAY_TYPE")
        {
            let trusted = addresses["class_BytecodeArray__wrapper__Tagged_BytecodeWrapper_"] != nil
            executingLine = ExecutingLine(
                frameBytecodeArray: frameBytecodeArray, frameBytecodeOffset: frameBytecodeOffset, bytecodeArrayType: bytecodeArrayType,
                bytecodeArrayData: bytecodeArrayData, sourcePositionTable: trusted ? 24 : 32,
                tableTypes: Set([byteArrayType] + (constant("type_TrustedByteArray__TRUSTED_BYTE_ARRAY_TYPE").map { [$0] } ?? [])),
                byteArrayLength: fixedArrayLength, byteArrayData: 16)
        }
    }
}
