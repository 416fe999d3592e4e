import Foundation
import PinningLab
import PinningLabIntercept
import PinningLabTestSupport
import Testing

@testable import PinningLabControl

/// The live view of `pinlab intercept --live` and `pinlab serve --control`: real connections through the proxy (curl
/// as the client under test) change what `GET /live/events` answers and what the page shows in headless Chromium;
/// the page's server refuses what a web page or another host could send, as the control API does.
@Suite("Live view", .serialized)
struct LiveViewTests {
    /// A proxy declaring `**.api.pinning.test` pinned (mint policy) and its live view on a loopback port of its own.
    static func withLiveProxy<T>(_ body: (InterceptProxy, LiveViewServer, _ proxyRootPEM: String) async throws -> T)
        async throws -> T
    {
        let pki = try await ControlTestLab.pki()
        let proxy = try InterceptProxy.start(
            pki: pki, configuration: .init(pinned: [try HostPattern(parsing: "**.api.pinning.test")]))
        let live: LiveViewServer
        do {
            live = try LiveViewServer.start(address: "127.0.0.1:0", feed: .intercept(proxy))
        } catch {
            await proxy.stop()
            throw error
        }
        let root = TestScratch.root.appendingPathComponent("pinlab-live-\(UUID().uuidString).pem")
        try PEM.encode([try #require(pki["proxy-root"]).certificateDER]).write(
            to: root, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: root) }
        do {
            let result = try await Curl.$token.withValue(live.token) { try await body(proxy, live, root.path) }
            await live.stop()
            await proxy.stop()
            return result
        } catch {
            await live.stop()
            await proxy.stop()
            throw error
        }
    }

    /// curl through the proxy to `https://HOST/`, trusting the proxy's root (so it sends its request) or not (so it
    /// refuses with unknown_ca). Its own verdict does not matter here: the proxy records what it did.
    static func curlThroughProxy(_ proxy: InterceptProxy, host: String, trustingProxyRoot root: String?) async {
        var args = ["curl", "-s", "-o", "/dev/null", "--max-time", "20", "-x", "http://\(proxy.address)"]
        if let root { args += ["--cacert", root] }
        _ = await ChildProcess.run(args + ["https://\(host)/"], timeout: .seconds(30))
    }

    static func groups(_ snapshot: [String: Any]) -> [String: [String: Any]] {
        var out: [String: [String: Any]] = [:]
        for g in snapshot["groups"] as? [[String: Any]] ?? [] { out[g["name"] as? String ?? "?"] = g }
        return out
    }

    /// A long poll — `GET live/events?since=VERSION&wait=10` by curl in the background — made a connection's
    /// event: once `pending` says the server holds the poll, `connection` runs at once, and the poll's answer comes
    /// back with how long curl waited for it. The wait and the connection run on a thread of their own, so a test
    /// process whose cooperative threads are busy (a full `swift test` starting on two cores) cannot delay the
    /// connection past the poll's 10 s.
    static func longPoll(
        _ baseURL: String, since version: Int, token: String?, pending: @escaping @Sendable (_ trace: String) -> Bool,
        then connection: [String]
    ) async throws -> (answer: [String: Any], seconds: Double) {
        let out = TestScratch.root.appendingPathComponent("pinlab-live-poll-\(UUID().uuidString)").path
        defer { for f in [out, out + ".time", out + ".trace"] { try? FileManager.default.removeItem(atPath: f) } }
        var args = ["curl", "-s", "-v", "--max-time", "30", "-o", out, "-w", "%{time_total}"]
        if let token { args += ["-H", "Authorization: Bearer \(token)"] }
        let poll = try ChildProcess.spawnBackground(
            args + ["\(baseURL)live/events?since=\(version)&wait=10"],
            stdoutFile: out + ".time", stderrFile: out + ".trace")
        defer { poll.terminate() }
        let held = await onAThreadOfItsOwn("test.live.poll") { () -> Bool in
            let held = eventuallyBlocking(TestTimeouts.exchange) { pending(out + ".trace") }
            _ = ChildProcess.runBlocking(connection, timeout: .seconds(30))
            return held
        }
        #expect(
            held,
            "the long poll was not pending within \(TestTimeouts.exchange): \((try? String(contentsOfFile: out + ".trace", encoding: .utf8)) ?? "")"
        )
        try #require(await eventually(TestTimeouts.exchange) { !poll.isRunning }, "the long poll did not answer")
        let answer = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out))) as? [String: Any])
        let seconds = try #require(Double(try String(contentsOfFile: out + ".time", encoding: .utf8)))
        return (answer, seconds)
    }

    /// Whether a long poll's request has reached a server on `port` and been read there: curl says it sent it (its
    /// `-v` trace has the request line), and the server's end of every connection it holds has nothing left unread.
    static func pollIsRead(serverPort port: Int, trace: String) -> Bool {
        guard let text = try? String(contentsOfFile: trace, encoding: .utf8), text.contains("> GET /live/events") else {
            return false
        }
        let held = TCPConnections.involving(port: port).filter { $0.localPort == port && $0.isEstablished }
        return !held.isEmpty && held.allSatisfy { $0.receiveQueue == 0 }
    }

    @Test(
        "the events change as connections go through the proxy; a long poll answers when one happens", .requires("curl")
    )
    func eventsFollowTheProxy() async throws {
        try await Self.withLiveProxy { proxy, live, root in
            let first = try await Curl.get(live.url + "live/events").json()
            #expect((first["groups"] as? [Any])?.isEmpty == true, "\(first)")
            let version = try #require(first["version"] as? Int)

            // A long poll from the version the page saw, answered by the first connection, not by its 10 s wait: the
            // connection is made once the server has begun the poll (its count of event requests moved).
            let begun = live.eventRequestsServed
            let (change, pollSeconds) = try await Self.longPoll(
                live.url, since: version, token: live.token, pending: { _ in live.eventRequestsServed > begun },
                then: [
                    "curl", "-s", "-o", "/dev/null", "--max-time", "20", "-x", "http://\(proxy.address)", "--cacert",
                    root,
                    "https://cdn.pinning.test/",
                ])
            #expect(change["version"] as? Int != version)
            #expect(
                pollSeconds < 9, "the long poll waited for its timeout (\(pollSeconds) s) instead of the connection")
            print("live view: a long poll answered after \(pollSeconds) s, the connection made once it was pending")

            await Self.curlThroughProxy(proxy, host: "api.pinning.test", trustingProxyRoot: nil)
            await Self.curlThroughProxy(proxy, host: "v2.api.pinning.test", trustingProxyRoot: root)
            #expect(await proxy.settle())
            let now = try await Curl.get(live.url + "live/events").json()
            let g = Self.groups(now)
            #expect(Set(g.keys) == ["cdn.pinning.test", "api.pinning.test", "v2.api.pinning.test"], "\(now)")
            // Pinned and refused (curl does not trust the proxy root): good; pinned and sent: NOT PINNED.
            #expect(g["api.pinning.test"]?["verdict"] as? String == "refused")
            #expect(g["api.pinning.test"]?["tone"] as? String == "good")
            #expect(
                (g["api.pinning.test"]?["refusals"] as? [String])?.contains("sent the alert unknown_ca") == true, "\(g)"
            )
            #expect(g["api.pinning.test"]?["requestsSent"] as? Int == 0)
            #expect(g["v2.api.pinning.test"]?["verdict"] as? String == "not-pinned")
            #expect(g["v2.api.pinning.test"]?["tone"] as? String == "bad")
            #expect(g["cdn.pinning.test"]?["verdict"] as? String == "allowed")
            #expect(g["cdn.pinning.test"]?["requestsSent"] as? Int == 1)
            let rows = try #require(now["connections"] as? [[String: Any]])
            #expect(
                rows.map { $0["group"] as? String } == ["cdn.pinning.test", "api.pinning.test", "v2.api.pinning.test"])
            #expect(rows.map { $0["handshakeCompleted"] as? Bool } == [true, false, true])
            #expect(rows.map { $0["applicationData"] as? Bool } == [true, false, true])
            #expect((rows[0]["requestLine"] as? String)?.hasPrefix("GET / HTTP/1.1") == true, "\(rows[0])")
            #expect((rows[0]["chain"] as? [String])?.first == "leaf for cdn.pinning.test minted by the proxy root")
        }
    }

    @Test(
        "the live view's server refuses foreign hosts, origins, binds and requests without the token", .requires("curl")
    )
    func refusesWhatTheControlAPIRefuses() async throws {
        try await Self.withLiveProxy { proxy, live, root in
            await Self.curlThroughProxy(proxy, host: "v2.api.pinning.test", trustingProxyRoot: root)
            #expect(await proxy.settle())
            let events = live.url + "live/events"
            // No token, a wrong one: 401, and no host in the answer.
            for token in [nil, "x" + (live.token ?? "")] as [String?] {
                let r = try await Curl.$token.withValue(token) { try await Curl.get(events) }
                #expect(r.status == 401, "\(r.text)")
                #expect(!r.text.contains("pinning.test"))
            }
            // DNS rebinding: a page at evil.example:PORT (the name rebound to 127.0.0.1) — refused on every route.
            for path in ["live", "live/app.js", "live/events"] {
                let r = try await Curl.request("GET", live.url + path, headers: ["Host: evil.example:\(live.port)"])
                #expect(r.status == 403 && r.text.contains("DNS rebinding"), "\(path): \(r.text)")
            }
            // A cross-origin page, even one holding the token: 403 and no CORS header that would let it read.
            let foreign = await ChildProcess.run(
                [
                    "curl", "-s", "-D", "-", "-H", "Origin: http://evil.example", "-H",
                    "Authorization: Bearer \(live.token ?? "")", events,
                ],
                timeout: .seconds(30))
            #expect(foreign.stdoutText.hasPrefix("HTTP/1.1 403"), "\(foreign.output)")
            #expect(!foreign.stdoutText.lowercased().contains("access-control-allow-origin"))
            #expect(!foreign.stdoutText.contains("v2.api.pinning.test"))
            // The page itself holds no data and needs no token; it forbids framing and foreign script.
            let page = await ChildProcess.run(["curl", "-s", "-D", "-", live.url + "live"], timeout: .seconds(30))
            #expect(page.stdoutText.hasPrefix("HTTP/1.1 200"), "\(page.output)")
            #expect(page.stdoutText.contains("Content-Security-Policy: default-src 'none'; script-src 'self'"))
            #expect(page.stdoutText.contains("X-Frame-Options: DENY"))
            #expect(!page.stdoutText.contains("v2.api.pinning.test") && !page.stdoutText.contains("<script>"))
            // The data, with the token: there.
            #expect(try await Curl.get(events).text.contains("v2.api.pinning.test"))
        }
        // Off loopback: refused, with the reason.
        let pki = try await ControlTestLab.pki()
        let proxy = try InterceptProxy.start(pki: pki, configuration: .init())
        defer { proxy.stopSync() }
        for address in ["0.0.0.0:0", "[::]:0", "192.0.2.1:0"] {
            let error = try #require(throws: ControlServerError.self) {
                try LiveViewServer.start(address: address, feed: .intercept(proxy))
            }
            #expect(error.reason.contains("loopback"), "\(address): \(error.reason)")
        }
        #expect(throws: ControlServerError.self) {
            try LiveViewServer.start(address: "127.0.0.1", feed: .intercept(proxy))
        }
    }

    @Test(
        "pinlab serve --control: /live is open, /live/events needs the token and shows the servers' connections",
        .requires("curl"))
    func controlLiveView() async throws {
        try await ControlTestLab.withControl { control, _ in
            #expect(control.livePageURL == control.url + "live#token=" + (control.token ?? ""))
            let page = try await Curl.$token.withValue(nil) { try await Curl.get(control.url + "live") }
            #expect(page.status == 200 && page.contentType.hasPrefix("text/html"))
            let refused = try await Curl.$token.withValue(nil) { try await Curl.get(control.url + "live/events") }
            #expect(refused.status == 401)
            let empty = try await Curl.get(control.url + "live/events").json()
            #expect((empty["groups"] as? [Any])?.isEmpty == true)
            let started = try await Curl.request(
                "POST", control.url + "servers", json: #"{"scenario": "baseline", "engine": "openssl"}"#
            ).json()
            let id = try #require(started["id"] as? String)
            let port = try #require(started["port"] as? Int)
            let version = try #require(try await Curl.get(control.url + "live/events").json()["version"] as? Int)
            // curl -k sends its request (once the control API holds the long poll); curl on the system's roots
            // refuses the lab's chain.
            let controlPort = control.port
            let (change, _) = try await Self.longPoll(
                control.url, since: version, token: control.token,
                pending: { Self.pollIsRead(serverPort: controlPort, trace: $0) },
                then: ["curl", "-s", "-k", "-o", "/dev/null", "--max-time", "20", "https://localhost:\(port)/"])
            #expect(change["version"] as? Int != version)
            _ = await ChildProcess.run(
                ["curl", "-s", "-o", "/dev/null", "--max-time", "20", "https://localhost:\(port)/"],
                timeout: .seconds(30))
            _ = try await Curl.get(control.url + "servers/\(id)/observations?wait=5")
            let now = try await Curl.get(control.url + "live/events").json()
            let g = try #require(Self.groups(now)[id], "\(now)")
            #expect(
                g["connections"] as? Int == 2 && g["requestsSent"] as? Int == 1
                    && g["verdict"] as? String == "accepted", "\(g)")
            #expect((g["refusals"] as? [String])?.first?.hasPrefix("sent the alert") == true, "\(g)")
            let rows = try #require(now["connections"] as? [[String: Any]])
            #expect(rows.count == 2)
            #expect((rows.first?["chain"] as? [String])?.first == "leaf-v1", "\(rows)")
        }
    }

    /// A scenario of several connections draws a group per party (its connections are there, not on the scenario
    /// server, which no step connects to), and a connection to the party changes the version a page waits on.
    @Test("the live view draws the parties of a scenario of several connections", .requires("curl"))
    func partiesAreDrawn() async throws {
        try await ControlTestLab.withControl { control, _ in
            let started = try await Curl.request(
                "POST", control.url + "servers",
                json: #"{"scenario": "resumption-after-unpinned-handshake", "engine": "openssl"}"#
            ).json()
            let id = try #require(started["id"] as? String)
            let party = try #require((started["parties"] as? [[String: Any]])?.first)
            let port = try #require(party["port"] as? Int)
            let before = try await Curl.get(control.url + "live/events").json()
            let waiting = try #require(Self.groups(before)["\(id)/interceptor"], "\(before)")
            #expect(waiting["connections"] as? Int == 0 && waiting["verdict"] as? String == "waiting", "\(waiting)")
            let version = try #require(before["version"] as? Int)
            let controlPort = control.port
            let (change, _) = try await Self.longPoll(
                control.url, since: version, token: control.token,
                pending: { Self.pollIsRead(serverPort: controlPort, trace: $0) },
                then: [
                    "curl", "-s", "-k", "-o", "/dev/null", "--max-time", "20", "--resolve",
                    "api.pinning.test:\(port):127.0.0.1",
                    "https://api.pinning.test:\(port)/",
                ])
            #expect(change["version"] as? Int != version)
            _ = try await Curl.get(control.url + "servers/\(id)/observations?party=interceptor&wait=5")
            let now = try await Curl.get(control.url + "live/events").json()
            let g = try #require(Self.groups(now)["\(id)/interceptor"], "\(now)")
            #expect(
                g["connections"] as? Int == 1 && g["requestsSent"] as? Int == 1
                    && g["verdict"] as? String == "accepted", "\(g)")
            #expect((g["detail"] as? String)?.contains("party interceptor") == true, "\(g)")
            let rows = try #require(now["connections"] as? [[String: Any]])
            #expect(
                rows.contains {
                    $0["group"] as? String == "\(id)/interceptor"
                        && ($0["chain"] as? [String])?.first == "proxy-leaf-api"
                },
                "\(rows)")
        }
    }

    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first(where: { FileManager.default.isExecutableFile(atPath: $0) })

    /// The page, open in headless Chromium before any connection, shows connections made while it is open: the
    /// DOM Chromium dumps has each host's row with its verdict. (Virtual time does not advance while the page's
    /// long poll is pending, so the page lives until enough connections have come for its time budget.)
    @Test("the live page shows connections made while it is open in headless Chromium", .requires("chromium", "curl"))
    func pageInChromium() async throws {
        let chromium = try #require(Self.chromium, "CI installs Chromium (.ci/run); none was found")
        let dir = TestScratch.root.appendingPathComponent("pinlab-live-browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try await Self.withLiveProxy { proxy, live, root in
            let served = live.eventRequestsServed
            async let browser = ChildProcess.run(
                [
                    chromium, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(dir.path)/profile",
                    "--virtual-time-budget=800", "--dump-dom", live.pageURL,
                ], timeout: TestTimeouts.browser)
            // The page has drawn its first (empty) snapshot and waits in its long poll (its second event request has
            // begun): only now do clients connect.
            let polling = await eventually(TestTimeouts.browser) { live.eventRequestsServed >= served + 2 }
            #expect(polling, "the page never began its long poll")
            await Self.curlThroughProxy(proxy, host: "api.pinning.test", trustingProxyRoot: nil)
            await Self.curlThroughProxy(proxy, host: "v2.api.pinning.test", trustingProxyRoot: root)
            // Connections keep coming until the page's time budget is spent and Chromium prints the DOM: each one once
            // the page has asked again (the answer to its poll drawn), or after a bound if it has not.
            let feeder = Task {
                for _ in 0..<90 where !Task.isCancelled {
                    let asked = live.eventRequestsServed
                    await Self.curlThroughProxy(proxy, host: "cdn.pinning.test", trustingProxyRoot: root)
                    await eventually(TestTimeouts.exchange) { Task.isCancelled || live.eventRequestsServed > asked }
                }
            }
            let run = await browser
            feeder.cancel()
            let dom = run.stdoutText
            #expect(
                dom.contains("data-name=\"api.pinning.test\" data-verdict=\"refused\""),
                "\(dom.suffix(3000)) \(run.stderrText.suffix(1000))")
            #expect(
                dom.contains("data-name=\"v2.api.pinning.test\" data-verdict=\"not-pinned\""), "\(dom.suffix(3000))")
            #expect(dom.contains("sent the alert unknown_ca"), "\(dom.suffix(3000))")
            #expect(dom.contains("live: "), "the status line was not drawn: \(dom.suffix(3000))")
            #expect(!dom.contains("token is missing"), "\(dom.suffix(2000))")
        }
    }
}
