import Foundation
import PackagePlugin

/// Embeds the teaching labs' definitions in PinningLabLabs, so that a `pinlab` binary copied anywhere (the release
/// tarball's) knows every lab: the package's `labs/labs.yaml` (the one list of lab folders, in order) and each
/// `labs/NN-name/lab.yaml` (one lab as data), keyed `labs.yaml` and `NN-name/lab.yaml`. The folders live at the
/// package root, where learners find them, so they are not SwiftPM resources of the target; the generator is the
/// EmbedResources plugin's (`pinlab-embed-resources`), told that the target has no resource bundle (`-`).
/// Regenerated whenever one of those files changes; a new folder is found when the build is planned.
@main
struct EmbedLabs: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let labs = context.package.directoryURL.appendingPathComponent("labs")
        var inputs: [(key: String, url: URL)] = []
        let list = labs.appendingPathComponent("labs.yaml")
        if FileManager.default.fileExists(atPath: list.path) { inputs.append(("labs.yaml", list)) }
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: labs.path)) ?? []
        for folder in folders.sorted() {
            let definition = labs.appendingPathComponent(folder).appendingPathComponent("lab.yaml")
            if FileManager.default.fileExists(atPath: definition.path) {
                inputs.append(("\(folder)/lab.yaml", definition))
            }
        }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedLabs.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(inputs.count) lab definition files in \(target.name)",
                executable: try context.tool(named: "pinlab-embed-resources").url,
                arguments: [output.path, "-"] + inputs.flatMap { [$0.key, $0.url.path] },
                inputFiles: inputs.map(\.url),
                outputFiles: [output])
        ]
    }
}
