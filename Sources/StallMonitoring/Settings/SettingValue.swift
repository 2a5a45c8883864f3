import StallProc

/// A type a setting's value can have: read from the text a user typed on the command line or
/// in the config file, and shown back in help and in range messages.
public protocol SettingValue: Sendable, Equatable {
    /// What a bad text is not, after "'TEXT' is not ": "a duration (examples: 1.5s, 250ms)".
    static var expectation: String { get }
    /// `.outOfRange` for text of the right form whose value no setting of the type could take
    /// (a negative duration, a size beyond Int64): the setting then names its bounds.
    static func parse(_ text: String) -> SettingParse<Self>
    /// The value as a user would type it (`10ms`, `512KiB`).
    var settingText: String { get }
    /// The whole complaint about a malformed text; by default "'TEXT' is not " + `expectation`.
    static func malformed(_ text: String) -> String
}

extension SettingValue {
    public static func malformed(_ text: String) -> String { "'\(text)' is not \(expectation)" }
}

public enum SettingParse<Value> {
    case value(Value)
    case malformed
    case outOfRange
}

extension SettingValue where Self: CustomStringConvertible {
    public var settingText: String { description }
}

/// Enumerations parse from their raw values; a bad one is answered with the list.
extension SettingValue where Self: CaseIterable & RawRepresentable, RawValue == String {
    public static var expectation: String {
        "one of " + allCases.map(\.rawValue).joined(separator: ", ")
    }

    public static func parse(_ text: String) -> SettingParse<Self> {
        Self(rawValue: text).map { .value($0) } ?? .malformed
    }

    public var settingText: String { rawValue }
}

extension LoopTurnMode: SettingValue {}

/// Counts (`max-reports`): every count the agent takes must be at least 1.
extension Int: SettingValue {
    public static var expectation: String { "a positive whole number" }

    public static func parse(_ text: String) -> SettingParse<Int> {
        guard let value = Int(text), value > 0 else { return .malformed }
        return .value(value)
    }
}

/// YAML 1.1's spellings, which is what a config file's author expects of `quiet: yes`.
extension Bool: SettingValue {
    public static var expectation: String { "true or false" }

    public static func parse(_ text: String) -> SettingParse<Bool> {
        switch text.lowercased() {
        case "true", "yes", "on": .value(true)
        case "false", "no", "off": .value(false)
        default: .malformed
        }
    }
}

/// Paths, addresses, names and patterns: any text.
extension String: SettingValue {
    public static var expectation: String { "text" }
    public static func parse(_ text: String) -> SettingParse<String> { .value(text) }
}

/// A system call by name or number (`idle-syscalls: [read, 7]`).
public struct SystemCall: SettingValue, Hashable {
    public let number: Int

    public static var expectation: String { "a system call name or number (e.g. read, futex)" }
    public static func malformed(_ text: String) -> String { "unknown system call '\(text)'" }

    public static func parse(_ text: String) -> SettingParse<SystemCall> {
        guard let number = ProcSyscallInfo.number(ofSyscall: text) ?? Int(text) else { return .malformed }
        return .value(SystemCall(number: number))
    }

    public var settingText: String { "\(number)" }
}
