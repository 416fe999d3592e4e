#!/usr/bin/env python3
"""Captures real clients' bytes to a fixture server as seeds for the server-path fuzz targets.

    capture_seeds.py PINLAB PKI_DIR OUT_DIR

Starts `pinlab serve --scenario mtls-optional-missing` (client authentication optional), puts a recording relay on
127.0.0.1 in front of it, and runs openssl s_client, gnutls-cli and curl through the relay: TLS 1.2 and 1.3, with and
without SNI, with ALPN, with and without a client certificate. For each connection it writes two seeds: the
client's first TLS record (the ClientHello) and everything the client sent (for TLS 1.2 with a client certificate,
the plaintext Certificate flight). The client certificate flights carry a run-time certificate: nothing captured
is committed. Prints the number of seeds written.
"""
import json, os, socket, subprocess, sys, threading, time

pinlab, pki, out = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
manifest = os.path.join(out, "..", "capture-manifest.json")
server = subprocess.Popen([pinlab, "serve", "--dir", pki, "--scenario", "mtls-optional-missing", "--engine", "openssl",
                           "--manifest", manifest], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 60
while not os.path.exists(manifest) and time.monotonic() < deadline:
    time.sleep(0.05)


def ports(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "port" and isinstance(v, int):
                yield v
            else:
                yield from ports(v)
    elif isinstance(node, list):
        for v in node:
            yield from ports(v)


with open(manifest) as f:
    upstream = next(ports(json.load(f)))

captured = []
lock = threading.Lock()


def pump(src, dst, record):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            if record is not None:
                record.extend(b)
            dst.sendall(b)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def relay(conn):
    up = socket.create_connection(("127.0.0.1", upstream))
    sent = bytearray()
    t = threading.Thread(target=pump, args=(up, conn, None))
    t.start()
    pump(conn, up, sent)
    t.join(10)
    conn.close()
    up.close()
    with lock:
        captured.append(bytes(sent))


listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(16)
port = listener.getsockname()[1]


def accept_loop():
    while True:
        try:
            c, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=relay, args=(c,), daemon=True).start()


threading.Thread(target=accept_loop, daemon=True).start()
cert = os.path.join(pki, "certs/client-valid/cert.pem")
key = os.path.join(pki, "certs/client-valid/key.pem")
request = b"GET /seed HTTP/1.1\r\nHost: localhost\r\n\r\n"
runs = []
for v in ("-tls1_2", "-tls1_3"):
    for extra in ([], ["-noservername"], ["-alpn", "h2,http/1.1"], ["-cert", cert, "-key", key],
                  ["-servername", "rsa.pinning.test"]):
        runs.append(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost", v, "-quiet"] + extra)
for prio in ("NORMAL:-VERS-ALL:+VERS-TLS1.2", "NORMAL:-VERS-ALL:+VERS-TLS1.3"):
    for extra in ([], ["--alpn", "http/1.1"], ["--x509certfile", cert, "--x509keyfile", key]):
        runs.append(["gnutls-cli", "--insecure", "--priority", prio, "-p", str(port), "localhost"] + extra)
for v in ("--tlsv1.2", "--tls-max"):
    runs.append(["curl", "-sk", v] + (["1.3"] if v == "--tls-max" else []) + [f"https://localhost:{port}/"])
for r in runs:
    subprocess.run(r, input=request, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20)
time.sleep(0.5)
listener.close()
server.terminate()
server.wait(30)

n = 0
for i, data in enumerate(captured):
    if len(data) < 5:
        continue
    first = 5 + int.from_bytes(data[3:5], "big")
    for name, seed in ((f"hello-{i}", data[:first]), (f"stream-{i}", data)):
        with open(os.path.join(out, name), "wb") as f:
            f.write(seed)
        n += 1
# Request-mode seeds (first byte 0x00): plaintext requests sent after a real handshake.
for i, r in enumerate([request, b"GET / HTTP/1.0\n\n", b"POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
                       b"GET /\"\\\x01 HTTP/1.1\r\n\r\n", b"GET /partial HTTP/1.1\r\n"]):
    with open(os.path.join(out, f"request-{i}"), "wb") as f:
        f.write(b"\x00" + r)
    n += 1
print(f"{n} seeds from {len(captured)} captured connections ({len(runs)} client runs)")
