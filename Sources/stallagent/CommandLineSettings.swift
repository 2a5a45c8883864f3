import ArgumentParser
import StallMonitoring

/// The settings a parsed command was given, as texts by flag: the command line's side of the
/// settings table. ArgumentParser needs one property per option; each setting's property is
/// named after its flag (`launchThreshold` is `--launch-threshold`, ArgumentParser's own
/// naming), so values reach their bindings (`SettingBinding`) with no mapping written by hand.
/// `SettingsTableTests` walks the table through the binary (`--print-config`) to hold every
/// flag to it.
enum CommandLineSettings {
    /// Texts by flag for every option and flag given on the command line (a Boolean flag given
    /// is "true", or "false" for a `--no-…` flag); options that are not settings are there too,
    /// and ignored by the bindings.
    static func given(in command: Any) -> [String: [String]] {
        var given: [String: [String]] = [:]
        for child in Mirror(reflecting: command).children {
            guard let label = child.label, label.hasPrefix("_") else { continue }
            let flag = kebabCase(String(label.dropFirst()))
            switch child.value {
            case let option as any GivenOption:
                let texts = option.givenTexts
                if !texts.isEmpty { given[flag] = texts }
            case let switchFlag as any GivenFlag:
                if switchFlag.isOn { given[flag] = [flag.hasPrefix("no-") ? "false" : "true"] }
            case let group as any GivenGroup:
                given.merge(Self.given(in: group.arguments)) { _, nested in nested }
            default:
                continue
            }
        }
        return given
    }

    /// `maxReportBytes` → `max-report-bytes`.
    static func kebabCase(_ name: String) -> String {
        name.reduce(into: "") { result, character in
            if character.isUppercase, !result.isEmpty { result.append("-") }
            result.append(contentsOf: character.lowercased())
        }
    }
}

extension Array where Element == SettingBinding<MonitorOptions> {
    /// Options from a command line's texts, with ArgumentParser's usage on a bad value.
    func monitorOptions(_ given: [String: [String]], base: MonitorOptions = MonitorOptions()) throws -> MonitorOptions {
        var options = base
        do throws(SettingProblem) {
            try apply(commandLine: given, to: &options)
        } catch {
            throw ValidationError(error.description)
        }
        return options
    }
}

/// A value an option holds, as the texts the user typed.
protocol SettingTexts { var settingTexts: [String] { get } }
extension SettingArgument: SettingTexts { var settingTexts: [String] { [text] } }
extension String: SettingTexts { var settingTexts: [String] { [self] } }
extension Optional: SettingTexts where Wrapped: SettingTexts { var settingTexts: [String] { self?.settingTexts ?? [] } }
extension Array: SettingTexts where Element: SettingTexts { var settingTexts: [String] { flatMap(\.settingTexts) } }

protocol GivenOption { var givenTexts: [String] { get } }
extension Option: GivenOption where Value: SettingTexts { var givenTexts: [String] { wrappedValue.settingTexts } }

protocol GivenFlag { var isOn: Bool { get } }
extension Flag: GivenFlag where Value == Bool { var isOn: Bool { wrappedValue } }

protocol GivenGroup { var arguments: Any { get } }
extension OptionGroup: GivenGroup { var arguments: Any { wrappedValue } }
