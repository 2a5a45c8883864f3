/// Where Ruby keeps what naming its calls needs, per version: Ruby exports no description of
/// its structures, so the offsets are written here from its headers (rbspy generates the same
/// per version). x86-64, checked against Debian's ruby3.1 (3.1.2) by reading a script's
/// frames and comparing them with its own `caller(0)` (docs/architecture.md, "Ruby frames").
struct RubyLayout: Sendable, Equatable {
    /// `rb_vm_t.ractor.main_thread`.
    var vmMainThread: UInt64
    /// `rb_thread_t.ec`.
    var threadExecutionContext: UInt64
    /// `rb_execution_context_t`: vm_stack, vm_stack_size (in words), cfp.
    var contextStack: UInt64
    var contextStackSize: UInt64
    var contextFrame: UInt64
    /// `sizeof(rb_control_frame_t)`, and its pc, iseq and ep.
    var frameSize: Int
    var framePC: Int
    var frameIseq: Int
    var frameEnvironment: Int
    /// `rb_iseq_t.body`.
    var iseqBody: UInt64
    /// `rb_iseq_constant_body`: iseq_encoded, location.pathobj, location.label,
    /// insns_info.body, insns_info.size, insns_info.succ_index_table.
    var bodyEncoded: Int
    var bodyPath: Int
    var bodyLabel: Int
    var bodyLineTable: Int
    var bodyLineTableSize: Int
    var bodyLineIndex: Int
    var bodyHeaderSize: Int
    /// `sizeof(struct iseq_insn_info_entry)` (line_no first).
    var lineEntrySize: UInt64
    /// `rb_callable_method_entry_t.called_id`.
    var methodCalledID: UInt64
    /// `RUBY_ID_SCOPE_SHIFT`, `tLAST_OP_ID`: an ID's serial number in the symbol table.
    var idScopeShift: UInt64
    var lastOperatorID: UInt64

    /// Ruby 3.1 (vm_core.h, iseq.h, method.h, symbol.h): `location.first_lineno` is a VALUE
    /// there, which puts the line table at 0x78.
    static let ruby31 = RubyLayout(
        vmMainThread: 0x28, threadExecutionContext: 0x28, contextStack: 0, contextStackSize: 8, contextFrame: 16,
        frameSize: 0x40, framePC: 0, frameIseq: 16, frameEnvironment: 32, iseqBody: 0x10, bodyEncoded: 0x08,
        bodyPath: 0x40, bodyLabel: 0x50, bodyLineTable: 0x78, bodyLineTableSize: 0x88, bodyLineIndex: 0x90,
        bodyHeaderSize: 0x98, lineEntrySize: 12, methodCalledID: 0x18, idScopeShift: 4, lastOperatorID: 0xa9)

    // The environment's flags (ep[0]) and the frame kinds they tell (vm_core.h).
    static let frameMagicMask: UInt64 = 0x7fff_0001
    static let magicCFunction: UInt64 = 0x5555_0001
    static let magicDummy: UInt64 = 0x7999_0001
    /// The frame returns to C (it is the outermost of one `rb_vm_exec` activation).
    static let flagFinish: UInt64 = 0x20
    /// A C function's frame (no iseq).
    static let flagCFrame: UInt64 = 0x80

    // Object headers (ruby/internal/value_type.h, rstring.h, rarray.h, imemo.h).
    static let typeMask: UInt64 = 0x1f
    static let typeString: UInt64 = 0x05
    static let typeArray: UInt64 = 0x07
    static let typeHash: UInt64 = 0x08
    static let typeIMemo: UInt64 = 0x1a
    static let imemoMethodEntry: UInt64 = 6
    /// RSTRING_NOEMBED and RARRAY_EMBED_FLAG (FL_USER1).
    static let userFlag1: UInt64 = 1 << 13
    /// An embedded string's length: flags bits 14–18; an embedded array's: bits 15–16.
    static let stringEmbedShift: UInt64 = 14
    static let arrayEmbedShift: UInt64 = 15
    /// The global symbol table's `ids`: arrays of 512 entries of (string, symbol).
    static let idEntryUnit: UInt64 = 512
}
