@_exported public import PinningLabEngines
@_exported public import PinningLabModel
// What a module that imports PinningLab sees besides the facade's own types: the PKI, the domain model, the reports
// and the engine registry whole, the error of a run option, and a curated set of the engine boundary. (The reports
// and the registry were the facade's own files; a user's `import PinningLab` names them as before.)
@_exported public import PinningLabPKI
@_exported public import PinningLabReports

@_exported public import struct PinningLabBase.CheckSetupError
@_exported public import struct PinningLabCore.CipherPreferences
@_exported public import struct PinningLabCore.EngineSupport
@_exported public import class PinningLabCore.FixtureServer
@_exported public import struct PinningLabCore.Observation
@_exported public import struct PinningLabCore.ObservedCertificate
@_exported public import struct PinningLabCore.ServerIdentity
@_exported public import struct PinningLabCore.ServerTLSConfiguration
@_exported public import protocol PinningLabCore.TLSEngine
@_exported public import struct PinningLabTLSTypes.CipherSuite
@_exported public import struct PinningLabTLSTypes.ClientAuthentication
@_exported public import struct PinningLabTLSTypes.TLSAlert
// From the engine boundary, the types the model and the runner's API name; what only an engine or a listener needs
// (ListenerSettings, TLSServerContext, TLSServerSession, TLSStep, TLSTermination, TLSSessionDetails, TLSEngineError,
// TLSCertificateMessage) stays in PinningLabCore.
@_exported public import struct PinningLabTLSTypes.TLSVersion
