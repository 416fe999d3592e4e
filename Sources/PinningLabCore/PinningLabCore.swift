// PinningLabCore: engine-neutral TLS server configuration, the TLSEngine protocol, FixtureServer and observations.
