// PinningLab: the facade — Lab, the catalogue, the runner, reports.
@_exported public import PinningLabPKI
@_exported public import PinningLabCore
