import PackagePlugin

/// Embeds `web/` in NavSyncRuntime at build time: the device page, navsync.js and
/// navsync.d.ts become one generated Swift file (`WebAssets.swift`), so navsyncd serves
/// them from its own binary and there is no committed copy to keep in step.
@main
struct EmbedWebPlugin: BuildToolPlugin {
    /// The files and the names they get in `WebPage`.
    static let files = [("indexHTML", "index.html"), ("moduleJS", "navsync.js"), ("moduleTypes", "navsync.d.ts")]

    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let web = context.package.directoryURL.appending(path: "web")
        let output = context.pluginWorkDirectoryURL.appending(path: "WebAssets.swift")
        let inputs = Self.files.map { web.appending(path: $0.1) }
        return [.buildCommand(
            displayName: "Embedding the web page and navsync.js in \(target.name)",
            executable: try context.tool(named: "embed-web").url,
            arguments: [output.path] + zip(Self.files, inputs).map { "\($0.0.0)=\($0.1.path)" },
            inputFiles: inputs,
            outputFiles: [output])]
    }
}
