public import Foundation

/// How long a test waits for something, by what it waits for: a bound that only a wedged process or a broken
/// feature reaches, never a timing assertion. Each is sized for a debug build on a loaded two-core machine (the
/// suites run side by side, and other builds may share the cores), with headroom over what was measured there.
///
/// `PINLAB_TEST_TIMEOUT_SCALE` (a number, default 1) multiplies every bound, for a slower machine (a sanitizer build,
/// an emulated CPU): `PINLAB_TEST_TIMEOUT_SCALE=3 swift test`.
public enum TestTimeouts {
    /// `PINLAB_TEST_TIMEOUT_SCALE`, when it is a positive number; 1 otherwise.
    public static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["PINLAB_TEST_TIMEOUT_SCALE"], let value = Double(text),
            value.isFinite, value > 0
        else { return 1 }
        return value
    }()

    static func scaled(_ seconds: Double) -> Duration { .milliseconds(Int64((seconds * scale * 1000).rounded())) }

    /// One loopback exchange or the next event of a running process: a TLS handshake, an HTTP answer, a connection
    /// arriving, a long poll registering (milliseconds when quiet).
    public static var exchange: Duration { scaled(15) }
    /// A process coming up to where it says so (a ready file, a complete manifest, a listening port); the lab PKI
    /// may be issued first (`pinlab pki init`: about 0.1 s quiet).
    public static var startup: Duration { scaled(60) }
    /// One short command run to its end: a `pinlab` command over a few cells, `pki init`/`pki list`, a Python or
    /// JVM client making a few handshakes, a shell script of openssl commands (seconds when quiet).
    public static var command: Duration { scaled(60) }
    /// Headless Chromium starting, loading a page and dumping its DOM or taking a screenshot (a few seconds quiet;
    /// its first start on a loaded machine can take tens).
    public static var browser: Duration { scaled(90) }
    /// A compile: `javac`, or `java` launching a source file (which compiles it first).
    public static var compile: Duration { scaled(180) }
    /// A run over the whole catalogue in one client process: a built-in client (0.8 s in a release build), a batch
    /// harness (Python 4.6 s, OkHttp 9.4 s measured in the suites), a `pinlab` command that may do that.
    public static var catalogue: Duration { scaled(300) }
    /// The whole catalogue with a new client process per cell: OkHttp took 690 s in a full CI run (its JVM starts
    /// 800 times), Python 158 s.
    public static var cataloguePerCell: Duration { scaled(1500) }
}

extension Duration {
    /// The duration in seconds, for the APIs that take a `TimeInterval`.
    public var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
