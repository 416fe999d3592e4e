import Foundation
import PinningLabBase
import PinningLabCore
import PinningLabModel
import PinningLabPKI

/// What every run starts with: the time, the selected scenarios, and the folder of its trust and client files (a
/// temporary one unless `options.workDirectory` is set, removed by `cleanUp()`).
struct RunStart {
    let date = Date()
    let clock = ContinuousClock.now
    let selected: Catalogue
    let files: CellFiles
    private let ownsWork: Bool

    init(_ runner: CheckRunner, _ options: CheckOptions) throws {
        selected = try runner.catalogue.selecting(options.scenarios)
        ownsWork = options.workDirectory == nil
        let work = try options.workDirectory ?? makeTemporaryDirectory()
        do {
            files = try CellFiles(pki: runner.pki, directory: work)
        } catch {
            if ownsWork { ScratchFolders.remove(work) }
            throw error
        }
    }

    func cleanUp() {
        files.responders?.stopAll()
        if ownsWork { ScratchFolders.remove(files.directory) }
    }
}
