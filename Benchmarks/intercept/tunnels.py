"""Holds N tunnels through an HTTP CONNECT proxy at once, then uses every one of them: a TLS handshake (Python's
ssl, trusting CAFILE) and a GET over each, while all the others stay open. Prints
`opened N`, then `used OK/N`, `failures ...` and the wall time of each phase.
Usage: python3 tunnels.py PROXY_PORT HOST PORT N CAFILE GO_FILE (the tunnels are used once GO_FILE exists)"""
import os
import socket
import ssl
import sys
import time

proxy_port, host, port, n, cafile, go = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
t0 = time.perf_counter()
tunnels = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", proxy_port), timeout=30)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = s.recv(1)
        if not chunk:
            break
        reply += chunk
    if not reply.startswith(b"HTTP/1.1 200"):
        print(f"tunnel {i}: {reply[:80]!r}", flush=True)
        sys.exit(1)
    tunnels.append(s)
t1 = time.perf_counter()
print(f"opened {len(tunnels)} in {(t1 - t0) * 1000:.0f} ms", flush=True)
while not os.path.exists(go):  # the benchmark counts the open tunnels on both sides, then says go
    time.sleep(0.01)
context = ssl.create_default_context(cafile=cafile)
ok, failures = 0, []
for i, s in enumerate(tunnels):
    try:
        with context.wrap_socket(s, server_hostname=host) as t:
            t.sendall(f"GET /tunnel/{i} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while True:
                chunk = t.recv(4096)
                if not chunk:
                    break
                data += chunk
            if data.startswith(b"HTTP/1.1 200"):
                ok += 1
            else:
                failures.append(i)
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        failures.append(f"{i}: {e}")
t2 = time.perf_counter()
print(f"used {ok}/{len(tunnels)} in {(t2 - t1) * 1000:.0f} ms", flush=True)
if failures:
    print(f"failures {failures[:10]}", flush=True)
    sys.exit(1)
