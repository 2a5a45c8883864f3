import ArgumentParser
import StallMonitoring

/// A setting's value as typed on the command line, checked by its `Setting` (the same check
/// and message as the config file) when the command validates. Not the value type itself:
/// ArgumentParser answers a failed `init?(argument:)` with "The value … is invalid" and no
/// reason, and wraps a throwing transform's reason in the same sentence, where the table's
/// message (`--threshold: '-1s' is out of range (10ms to 366d)`) says what to type instead.
struct SettingArgument<Value: SettingValue>: ExpressibleByArgument, Sendable {
    let text: String

    init(argument: String) { text = argument }
}

extension Setting {
    /// The long flag of a command-line setting.
    var longName: NameSpecification { .customLong(flag ?? "") }

    /// The table's help text, with the default as ArgumentParser prints it for defaulted options.
    var argumentHelp: ArgumentHelp {
        ArgumentHelp(help + (defaultText.map { " (default: \($0))" } ?? ""), valueName: valueName)
    }

    /// For settings whose help says what the default depends on (`--launch-threshold`).
    var plainArgumentHelp: ArgumentHelp { ArgumentHelp(help, valueName: valueName) }

    /// The flag's help without a value name (`--quiet`).
    var flagHelp: ArgumentHelp { ArgumentHelp(help) }

    /// The value given, else the setting's default (nil when it has none).
    func value(_ argument: SettingArgument<Value>?) throws -> Value? {
        try argument.map(parse) ?? defaultValue
    }

    /// Every value of a repeatable flag.
    func values(_ arguments: [SettingArgument<Value>]) throws -> [Value] {
        try arguments.map(parse)
    }

    func parse(_ argument: SettingArgument<Value>) throws -> Value {
        do throws(SettingProblem) {
            return try parse(argument.text)
        } catch {
            throw ValidationError("--\(name): \(error)")
        }
    }
}
