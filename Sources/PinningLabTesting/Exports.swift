// What a test target that imports PinningLabTesting sees: the types its tests name, and no more (the way
// HummingbirdTesting hands a test its client and response types, not the server's machinery). A test that needs
// more — the fixture servers' listener settings, engine internals, the batch protocol — imports PinningLab too.

// Running a scenario and reading the verdict.
@_exported public import enum PinningLab.Lab
@_exported public import class PinningLab.ScenarioServer
@_exported public import struct PinningLab.CheckRunner
@_exported public import struct PinningLab.CheckOptions
@_exported public import struct PinningLab.CheckReport
@_exported public import enum PinningLab.ClientUnderTest
@_exported public import enum PinningLab.Engines

// The domain: scenarios, what a client is handed and what it claims, and the judge's answer.
@_exported public import struct PinningLabModel.Scenario
@_exported public import struct PinningLabModel.Catalogue
@_exported public import enum PinningLabModel.Expectation
@_exported public import struct PinningLabModel.TrustProfile
@_exported public import struct PinningLabModel.PinProfile
@_exported public import struct PinningLabModel.PinSet
@_exported public import struct PinningLabModel.PinScope
@_exported public import struct PinningLabModel.ClientTarget
@_exported public import struct PinningLabModel.ClientCredentials
@_exported public import struct PinningLabModel.ClientOutcome
@_exported public import struct PinningLabModel.RefusalCategory
@_exported public import protocol PinningLabModel.PinningClient
@_exported public import struct PinningLabModel.Verdict
@_exported public import struct PinningLabModel.VerdictSummary
@_exported public import enum PinningLabModel.ObservedOutcome

// The PKI a test may read pins and certificates from, and what a server observed.
@_exported public import class PinningLabPKI.LabPKI
@_exported public import struct PinningLabPKI.Identity
@_exported public import struct PinningLabPKI.PinFormat
@_exported public import struct PinningLabCore.TLSVersion
@_exported public import struct PinningLabCore.Observation
