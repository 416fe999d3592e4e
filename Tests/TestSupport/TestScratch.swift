public import Foundation
import PinningLabBase
import PinningLabPKI

/// The one folder below which a test process writes its files: a scratch folder of the package's own kind
/// (`ScratchFolders`: `pinlab-test-run-PID-…`, mode 0700, locked while the process lives), removed when the process
/// exits. Tests used to make their folders straight in `/tmp` and never remove them: a run left dozens behind — PKI
/// folders with private keys among them. The folder of a run that did not exit (a crash, a SIGKILL) is removed by the
/// next run, whose first scratch folder of this kind finds its lock free.
///
/// The lab PKI the suites share (`TestPKIFolder`) stays outside on purpose: it is reused across runs.
public enum TestScratch {
    public static let root: URL = {
        do {
            let url = try ScratchFolders.make("pinlab-test-run")
            atexit { ScratchFolders.removeAll() }
            return url
        } catch {
            fatalError(
                "TestScratch: cannot create the test folder in \(FileManager.default.temporaryDirectory.path): \(error)"
            )
        }
    }()

}
