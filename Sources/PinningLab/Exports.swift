// What a module that imports PinningLab sees besides the facade's own types: the PKI and the domain model whole,
// and a curated set of the engine boundary.
@_exported public import PinningLabPKI
@_exported public import PinningLabModel
// From the engine boundary, the types the model and the runner's API name; what only an engine or a listener needs
// (ListenerSettings, TLSServerContext, TLSServerSession, TLSStep, TLSTermination, TLSSessionDetails, TLSEngineError,
// TLSCertificateMessage) stays in PinningLabCore.
@_exported public import struct PinningLabCore.TLSVersion
@_exported public import struct PinningLabCore.CipherSuite
@_exported public import struct PinningLabCore.CipherPreferences
@_exported public import struct PinningLabCore.ClientAuthentication
@_exported public import struct PinningLabCore.ServerIdentity
@_exported public import struct PinningLabCore.ServerTLSConfiguration
@_exported public import struct PinningLabCore.Observation
@_exported public import struct PinningLabCore.ObservedCertificate
@_exported public import struct PinningLabCore.TLSAlert
@_exported public import protocol PinningLabCore.TLSEngine
@_exported public import struct PinningLabCore.EngineSupport
@_exported public import class PinningLabCore.FixtureServer
