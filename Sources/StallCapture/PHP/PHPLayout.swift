/// Where PHP keeps what naming its calls needs, per version: PHP exports no description of its
/// structures, so the offsets are written here from its headers (phpspy ships the same per
/// version). x86-64, non-thread-safe builds.
struct PHPLayout: Sendable, Equatable {
    /// `zend_executor_globals.current_execute_data`.
    var currentExecuteData: UInt64
    /// `zend_execute_data`: opline, func, This.u1.type_info (call info in its top 16 bits),
    /// prev_execute_data.
    var executeOpline: UInt64
    var executeFunction: UInt64
    var executeThisTypeInfo: Int
    var executePrevious: UInt64
    var executeDataSize: Int
    /// `zend_function`: type (first byte), function_name, scope; `zend_op_array.filename`.
    var functionName: UInt64
    var functionScope: UInt64
    var functionFilename: UInt64
    var functionHeaderSize: Int
    /// `zend_class_entry.name`.
    var className: UInt64
    /// `zend_string`: len, val.
    var stringLength: UInt64
    var stringValue: UInt64
    /// `zend_op.lineno`.
    var oplineLineno: UInt64
    /// `ZEND_CALL_TOP`, in the call info: a call entered from C.
    var callTop: UInt32

    /// `sizeof(zend_executor_globals)` in PHP 8.2's non-thread-safe build: its symbol's size,
    /// checked before the layout is trusted.
    static let php82GlobalsSize = 1800

    static let internalFunction: UInt8 = 1
    static let userFunction: UInt8 = 2

    /// PHP 8.2, as `offsetof` gives them compiled against Debian's php8.2-dev headers
    /// (Zend/zend_globals.h, zend_compile.h, zend_types.h).
    static let php82 = PHPLayout(
        currentExecuteData: 488, executeOpline: 0, executeFunction: 24, executeThisTypeInfo: 40, executePrevious: 48,
        executeDataSize: 56, functionName: 8, functionScope: 16, functionFilename: 152, functionHeaderSize: 168, className: 8,
        stringLength: 16, stringValue: 24, oplineLineno: 24, callTop: 1 << 1)
}
