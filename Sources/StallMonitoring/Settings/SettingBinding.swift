/// Where one setting's value goes in a settings value (`Root`: `MonitorOptions`, the host's
/// `AgentConfiguration`, the wrapper's `RunOptions`), and how it reads back. The command line,
/// the config file and a target's overrides are loops over these bindings, so a setting
/// reaches its use the same way from each, and `--print-config` shows what was resolved.
public struct SettingBinding<Root>: Sendable {
    public let setting: any AnySetting
    /// Given several times (a repeated flag, a YAML list): each value adds to what is there,
    /// so a target's `idle-frames` add to the file's and the command line's.
    public let isList: Bool
    /// The mapping the key sits under in the config file (`retention:`), nil: the top level.
    public let configSection: String?
    private let assign: @Sendable (inout Root, [String]) throws(SettingProblem) -> Void
    private let read: @Sendable (Root) -> [String]

    /// A setting with one value: the last text given wins.
    public static func value<Value>(
        _ setting: Setting<Value>, section: String? = nil, get: @escaping @Sendable (Root) -> Value?,
        set: @escaping @Sendable (inout Root, Value) -> Void
    ) -> SettingBinding {
        SettingBinding(
            setting: setting, isList: false, configSection: section,
            assign: { (root: inout Root, texts: [String]) throws(SettingProblem) in
                for text in texts { set(&root, try setting.parse(text)) }
            },
            read: { root in get(root).map { [$0.settingText] } ?? [] })
    }

    /// A repeatable setting: every text given is added.
    public static func list<Value>(
        _ setting: Setting<Value>, get: @escaping @Sendable (Root) -> [Value],
        add: @escaping @Sendable (inout Root, [Value]) -> Void
    ) -> SettingBinding {
        SettingBinding(
            setting: setting, isList: true, configSection: nil,
            assign: { (root: inout Root, texts: [String]) throws(SettingProblem) in
                var values: [Value] = []
                for text in texts { values.append(try setting.parse(text)) }
                add(&root, values)
            },
            read: { root in get(root).map(\.settingText) })
    }

    /// Sets the value(s) `texts` stand for; a bad one throws the table's message.
    public func apply(_ texts: [String], to root: inout Root) throws(SettingProblem) {
        try assign(&root, texts)
    }

    /// The value(s) as a user would type them; empty when unset.
    public func texts(in root: Root) -> [String] { read(root) }

    /// The same binding on a value that holds `Root` (`AgentConfiguration.monitor`).
    public func lifted<Outer>(_ path: WritableKeyPath<Outer, Root> & Sendable) -> SettingBinding<Outer> {
        let assign = self.assign
        let read = self.read
        return SettingBinding<Outer>(
            setting: setting, isList: isList, configSection: configSection,
            assign: { (outer: inout Outer, texts: [String]) throws(SettingProblem) in
                try assign(&outer[keyPath: path], texts)
            },
            read: { outer in read(outer[keyPath: path]) })
    }

    private init(
        setting: any AnySetting, isList: Bool, configSection: String?,
        assign: @escaping @Sendable (inout Root, [String]) throws(SettingProblem) -> Void,
        read: @escaping @Sendable (Root) -> [String]
    ) {
        self.setting = setting
        self.isList = isList
        self.configSection = configSection
        self.assign = assign
        self.read = read
    }
}

extension Array {
    /// The binding of the setting with this flag, the command line's way in.
    public func binding<Root>(flag: String) -> SettingBinding<Root>? where Element == SettingBinding<Root> {
        first { $0.setting.flag == flag }
    }

    /// The binding of the setting with this key under `section`, the config file's way in.
    public func binding<Root>(configKey: String, section: String? = nil) -> SettingBinding<Root>?
    where Element == SettingBinding<Root> {
        first { $0.setting.configKey == configKey && $0.configSection == section }
    }

    /// Applies what the command line gave (texts by flag, as the user typed them), in the
    /// table's order; flags that are not settings are the caller's.
    public func apply<Root>(commandLine: [String: [String]], to root: inout Root) throws(SettingProblem)
    where Element == SettingBinding<Root> {
        for binding in self {
            guard let flag = binding.setting.flag, let texts = commandLine[flag], !texts.isEmpty else { continue }
            do throws(SettingProblem) {
                try binding.apply(texts, to: &root)
            } catch {
                throw SettingProblem("--\(flag): \(error)")
            }
        }
    }
}
