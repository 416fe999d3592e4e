// PinningLabTesting: helpers for other packages' test suites. Imports neither XCTest nor Testing.
@_exported public import PinningLab
