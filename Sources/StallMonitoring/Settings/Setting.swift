/// One setting, defined once: its value type, default, bounds, command-line flag, config-file
/// key and help text. The command line and the config file both parse through `parse(_:)`,
/// so one bad value gets one message; each adds only where it was (`--flag: …`, `FILE:LINE: 'key': …`).
public struct Setting<Value: SettingValue>: Sendable {
    /// The long flag without its dashes; nil: config file only.
    public let flag: String?
    /// The key in the config file; nil: command line only.
    public let configKey: String?
    /// The placeholder in `--help` (`--threshold <duration>`).
    public let valueName: String
    public let help: String
    /// nil: unset unless given (off, or derived from another setting, as the help says).
    public let defaultValue: Value?
    /// A setting that can be turned off takes `off` as well as a value (`launch-threshold: off`).
    public let off: Value?
    /// How the bounds read in a message (`10ms to 366d`); nil: every value of the type.
    public let rangeDescription: String?
    private let isAllowed: @Sendable (Value) -> Bool

    public init(
        flag: String?, configKey: String?, valueName: String, help: String, default defaultValue: Value? = nil,
        off: Value? = nil
    ) {
        self.init(
            flag: flag, configKey: configKey, valueName: valueName, help: help, default: defaultValue, off: off,
            rangeDescription: nil, isAllowed: { _ in true })
    }

    public init(
        flag: String?, configKey: String?, valueName: String, help: String, default defaultValue: Value? = nil,
        off: Value? = nil, range: ClosedRange<Value>
    ) where Value: Comparable {
        self.init(
            flag: flag, configKey: configKey, valueName: valueName, help: help, default: defaultValue, off: off,
            rangeDescription: "\(range.lowerBound.settingText) to \(range.upperBound.settingText)",
            isAllowed: { range.contains($0) })
    }

    private init(
        flag: String?, configKey: String?, valueName: String, help: String, default defaultValue: Value?, off: Value?,
        rangeDescription: String?, isAllowed: @escaping @Sendable (Value) -> Bool
    ) {
        self.flag = flag
        self.configKey = configKey
        self.valueName = valueName
        self.help = help
        self.defaultValue = defaultValue
        self.off = off
        self.rangeDescription = rangeDescription
        self.isAllowed = isAllowed
    }

    /// How the setting is named in messages and tables: its flag, else its key.
    public var name: String { flag ?? configKey ?? "" }

    /// The value `text` stands for, or what is wrong with it (without the setting's name).
    public func parse(_ text: String) throws(SettingProblem) -> Value {
        if let off, text.lowercased() == "off" { return off }
        switch Value.parse(text) {
        case .value(let value) where isAllowed(value):
            return value
        case .value, .outOfRange:
            throw SettingProblem("'\(text)' is out of range (\(rangeDescription ?? Value.expectation))")
        case .malformed:
            throw SettingProblem(off == nil ? Value.malformed(text) : "'\(text)' is not off or \(Value.expectation)")
        }
    }
}

/// What is wrong with a setting's value, worded the same wherever the value came from.
public struct SettingProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
