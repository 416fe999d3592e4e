import Foundation
import PackagePlugin

/// Embeds a target's resources in its code, so that a binary copied out of the build folder (the release tarball's
/// `pinlab`) still has them: one generated Swift file per target with each resource file's text, keyed by its path
/// inside SwiftPM's resource bundle (`scenarios/rekey.yaml`, `openapi.yaml`), and `EmbeddedResources.text(_:)`,
/// which reads the bundle when it sits next to the executable and the embedded copy otherwise. Regenerated whenever
/// a resource file changes, so the two copies are always the same bytes.
@main
struct EmbedResources: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        var inputs: [(key: String, url: URL)] = []
        for file in target.sourceFiles where file.type == .resource {
            // A `.copy` resource is one entry (a file or a whole folder); the bundle keeps its last path component.
            let base = file.url.deletingLastPathComponent()
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file.url.path, isDirectory: &isDirectory) else { continue }
            let urls: [URL]
            if isDirectory.boolValue {
                let walker = FileManager.default.enumerator(
                    at: file.url, includingPropertiesForKeys: [.isRegularFileKey])
                urls = (walker?.allObjects as? [URL] ?? []).filter {
                    (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true
                }
            } else {
                urls = [file.url]
            }
            for url in urls {
                let key = String(url.standardizedFileURL.path.dropFirst(base.standardizedFileURL.path.count + 1))
                inputs.append((key, url))
            }
        }
        inputs.sort { $0.key < $1.key }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedResources.swift")
        let bundleName = "\(context.package.displayName)_\(target.name)"
        return [
            .buildCommand(
                displayName: "Embedding \(inputs.count) resource files of \(target.name)",
                executable: try context.tool(named: "pinlab-embed-resources").url,
                arguments: [output.path, bundleName] + inputs.flatMap { [$0.key, $0.url.path] },
                inputFiles: inputs.map(\.url),
                outputFiles: [output])
        ]
    }
}
