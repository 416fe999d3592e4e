"""A TLS 1.3 client with Nagle's algorithm left on (as the JDK's sockets and Python's bare `socket` leave it), for the
delayed-ACK tests (DelayedAckTests, ProxyDelayedAckTests).

    nagle_client.py CA COUNT TARGET...

TARGET is `PORT` (a server on 127.0.0.1 for `localhost`) or `proxy:PORT:HOST` (CONNECT HOST:443 through the proxy on
127.0.0.1:PORT, then TLS to HOST). COUNT rounds, each one connection per target in turn; per connection prints the
target and the milliseconds from the request's `sendall` to the end of the response (the server closes after it).
"""
import socket
import ssl
import sys
import time


def exchange(raw, ctx, host):
    assert raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
    with ctx.wrap_socket(raw, server_hostname=host) as tls:
        t = time.monotonic()
        tls.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host.encode())
        answer = b""
        while True:
            data = tls.recv(16384)
            if not data:
                break
            answer += data
        assert answer.startswith(b"HTTP/1.1 "), answer[:40]
        return (time.monotonic() - t) * 1000


def connect(target):
    if not target.startswith("proxy:"):
        return socket.create_connection(("127.0.0.1", int(target)), timeout=10), "localhost"
    _, port, host = target.split(":")
    raw = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
    raw.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host.encode(), host.encode()))
    head = b""
    while b"\r\n\r\n" not in head:
        head += raw.recv(1)
    assert head.startswith(b"HTTP/1.1 200"), head
    return raw, host


def main():
    ca, count, targets = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    ctx = ssl.create_default_context(cafile=ca)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    for _ in range(count):
        for target in targets:
            raw, host = connect(target)
            print(target, "%.3f" % exchange(raw, ctx, host), flush=True)


if __name__ == "__main__":
    main()
