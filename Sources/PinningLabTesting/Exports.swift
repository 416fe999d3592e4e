// What a test target that imports PinningLabTesting sees: the types its tests name, and no more (trustme shows four,
// HummingbirdTesting five). A test that needs more — a catalogue of its own, the lab PKI, the servers' observations,
// the runner and its options, engine internals, the batch protocol — imports PinningLab too.
// `scripts/check-testing-face` (run by CI) counts these with the types declared in this module: at most 15.

// Running a scenario: the lab, the scenario server, the report of a whole check.
@_exported public import enum PinningLab.Lab
@_exported public import class PinningLab.ScenarioServer
@_exported public import struct PinningLabModel.ClientChecks
@_exported public import struct PinningLabModel.ClientCredentials
@_exported public import struct PinningLabModel.ClientOutcome
@_exported public import struct PinningLabModel.ClientTarget
// What a client is handed, what it claims and declares, and the judge's answer.
@_exported public import struct PinningLabModel.PinProfile
@_exported public import struct PinningLabModel.PinSet
@_exported public import protocol PinningLabModel.PinningClient
@_exported public import struct PinningLabModel.PlatformPolicy
@_exported public import struct PinningLabModel.Verdict
@_exported public import struct PinningLabReports.CheckReport

// Declared in this module: ScenarioID, ServerEngine, BuiltInClient.
