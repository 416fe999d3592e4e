#!/usr/bin/env python3
"""Loopback client for the control API of `pinlab serve --control`: latency, oversized requests, floods.

Every mode prints one JSON object on standard output. Loopback only (127.0.0.1), bounded in time and requests.

  latency  PORT [--token T] [--requests N]      GET /scenarios and POST /servers + DELETE: median and p99 (ms)
  oversized PORT [--sizes 1024,16384,...] [--repeat N] [--header] [--stall BYTES]
                                                time until the answer's status line to a request line (or one header)
                                                of each size, with the status
  flood    PORT [--clients 10] [--seconds S] [--size BYTES]
                                                clients sending oversized request lines until S seconds pass
  health-under-flood PORT [--clients 10] [--seconds S] [--size BYTES]
                                                GET /health latencies (ms) from one more connection during a flood
"""
import argparse
import json
import socket
import statistics
import sys
import threading
import time

HOST = "127.0.0.1"


def exchange(port, data, timeout=30.0):
    """Sends `data` (from a thread, so that a server answering early is seen at once) and reads the answer's head.
    Returns (status, milliseconds to the end of the answer's head, body bytes)."""
    start = time.perf_counter()
    s = socket.create_connection((HOST, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send():
        try:
            s.sendall(data)
        except OSError:
            pass

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    buf = b""
    elapsed = None
    try:
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        elapsed = (time.perf_counter() - start) * 1000
        head, _, body = buf.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
    except OSError:
        elapsed = elapsed if elapsed is not None else (time.perf_counter() - start) * 1000
        body = b""
    finally:
        s.close()
        sender.join(timeout=5)
    status = int(buf.split(b" ")[1]) if buf.startswith(b"HTTP/1.") and len(buf.split(b" ")) > 1 else 0
    return status, elapsed, body


def request(method, path, port, token=None, body=None):
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    data = b""
    if body is not None:
        data = json.dumps(body).encode()
        lines += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


def oversized_request(port, size, header=False):
    if header:
        return (f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Filler: ").encode() + b"a" * size + b"\r\n\r\n"
    return b"GET /" + b"a" * size + f" HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()


def summary(samples):
    ordered = sorted(samples)
    if not ordered:
        return {"n": 0}
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return {"n": len(ordered), "median": round(statistics.median(ordered), 3), "p99": round(p99, 3),
            "max": round(ordered[-1], 3)}


def latency(args):
    scenarios, start, stop = [], [], []
    for _ in range(args.requests):
        status, ms, _ = exchange(args.port, request("GET", "/scenarios", args.port, args.token))
        if status != 200:
            raise SystemExit(f"GET /scenarios answered {status}")
        scenarios.append(ms)
    for _ in range(args.requests):
        status, ms, body = exchange(args.port, request("POST", "/servers", args.port, args.token,
                                                       {"scenario": "baseline", "engine": "openssl"}))
        if status != 201:
            raise SystemExit(f"POST /servers answered {status}: {body[:300]!r}")
        start.append(ms)
        server = json.loads(body)["id"]
        status, ms, _ = exchange(args.port, request("DELETE", f"/servers/{server}", args.port, args.token))
        if status != 200:
            raise SystemExit(f"DELETE /servers/{server} answered {status}")
        stop.append(ms)
    return {"GET /scenarios": summary(scenarios), "POST /servers": summary(start), "DELETE /servers/{id}": summary(stop)}


def oversized(args):
    out = {}
    for size in [int(s) for s in args.sizes.split(",")]:
        times, statuses = [], set()
        data = oversized_request(args.port, size, args.header)
        if args.stall is not None:
            # Send only the first STALL bytes, then nothing more while the connection stays open: a server that
            # refuses a head over its cap as soon as it has read that much answers 431; one that waits for the rest
            # answers only when its read timeout passes (408), or after this client's timeout (status 0).
            data = data[:args.stall]
        for _ in range(args.repeat):
            status, ms, _ = exchange(args.port, data, timeout=args.timeout)
            times.append(ms)
            statuses.add(status)
        out[str(size)] = dict(summary(times), statuses=sorted(statuses))
    return out


class Flood:
    """`clients` threads sending oversized request lines, each on a new connection, until stopped."""

    def __init__(self, port, clients, size):
        self.port, self.stopping, self.sent = port, threading.Event(), 0
        self.data = oversized_request(port, size)
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(clients)]

    def run(self):
        while not self.stopping.is_set():
            try:
                s = socket.create_connection((HOST, self.port), timeout=2)
                try:
                    s.sendall(self.data)
                    s.recv(4096)
                except OSError:
                    pass
                s.close()
                self.sent += 1
            except OSError:
                time.sleep(0.01)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=5)


def flood(args):
    with Flood(args.port, args.clients, args.size) as f:
        time.sleep(args.seconds)
    return {"requests": f.sent}


def health_under_flood(args):
    samples, statuses = [], set()
    with Flood(args.port, args.clients, args.size) as f:
        time.sleep(0.2)
        end = time.time() + args.seconds
        while time.time() < end:
            status, ms, _ = exchange(args.port, request("GET", "/health", args.port), timeout=10)
            samples.append(ms)
            statuses.add(status)
            time.sleep(0.01)
    return {"health": summary(samples), "statuses": sorted(statuses), "floodRequests": f.sent}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    a = sub.add_parser("latency")
    a.add_argument("port", type=int)
    a.add_argument("--token")
    a.add_argument("--requests", type=int, default=2000)
    a.set_defaults(run=latency)
    a = sub.add_parser("oversized")
    a.add_argument("port", type=int)
    a.add_argument("--sizes", default="1024,16384,262144,1048576")
    a.add_argument("--repeat", type=int, default=5)
    a.add_argument("--header", action="store_true")
    a.add_argument("--timeout", type=float, default=60)
    a.add_argument("--stall", type=int, help="send only the first STALL bytes of each request, then wait")
    a.set_defaults(run=oversized)
    for name, run in [("flood", flood), ("health-under-flood", health_under_flood)]:
        a = sub.add_parser(name)
        a.add_argument("port", type=int)
        a.add_argument("--clients", type=int, default=10)
        a.add_argument("--seconds", type=float, default=3)
        a.add_argument("--size", type=int, default=1 << 20)
        a.set_defaults(run=run)
    args = p.parse_args()
    print(json.dumps(args.run(args)))


if __name__ == "__main__":
    sys.exit(main())
