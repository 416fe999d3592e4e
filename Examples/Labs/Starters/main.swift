// One executable for the eight labs: `lab-KIND N` runs lab N's client for the cell in the environment.
import Foundation
import LabKit

let labs: [String: any LabClient.Type] = [
    "1": Lab01WhyPin.self, "2": Lab02CertVsKey.self, "3": Lab03Rotation.self, "4": Lab04WhereToPin.self,
    "5": Lab05ChainStuffing.self, "6": Lab06PinPlusValidation.self, "7": Lab07MutualTLS.self,
    "8": Lab08HashTheRightBytes.self,
]
let arguments = CommandLine.arguments.dropFirst()
guard let n = arguments.first, let lab = labs[n.hasPrefix("0") ? String(n.dropFirst()) : n] else {
    FileHandle.standardError.write(Data("usage: \(CommandLine.arguments[0]) N   (N = 1 to 8: the lab)\n".utf8))
    exit(2)
}
await LabKit.main(lab)
