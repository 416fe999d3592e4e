#!/usr/bin/env python3
"""Compares two `pinlab check --format json` reports cell for cell, leaving out what differs from run to run.

    python3 Benchmarks/catalogue/compare.py A.json B.json

Left out: timings, handshake milliseconds (of the cell and of each step), durationSeconds/startedAt, loopback ports
inside any text (`127.0.0.1:PORT`, an HTTP/2 request line's `:authority host:PORT`), and two known races: in TLS 1.3
a server that refuses the client certificate alerts after the client's Finished, so the client reads either that
alert or a reset while sending ("send: Connection reset by peer …", clientDetail only); and a server that writes its
answer after the client closed records `serverError: Broken pipe` or not. Every other field must be equal. Exit
status 1 when any cell differs.
"""
import json
import re
import sys

PORTS = [(re.compile(r"(:authority [^:\s]+):\d+"), r"\1:PORT"), (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT")]
RACE = "send: Connection reset by peer during sending the request"


def ports(x):
    if isinstance(x, str):
        for pattern, replacement in PORTS:
            x = pattern.sub(replacement, x)
        return x
    if isinstance(x, list):
        return [ports(y) for y in x]
    if isinstance(x, dict):
        return {k: ports(v) for k, v in x.items()}
    return x


def clean_evidence(e):
    e = dict(e or {})
    e.pop("handshakeMilliseconds", None)
    if e.get("serverError") == "Broken pipe":
        del e["serverError"]
    return e


def cells(path):
    r = json.load(open(path))
    out = {}
    for v in r["verdicts"]:
        v = dict(v)
        v.pop("timings", None)
        if "evidence" in v:
            v["evidence"] = clean_evidence(v["evidence"])
        if "steps" in v:
            v["steps"] = [dict(s, evidence=clean_evidence(s.get("evidence"))) for s in v["steps"]]
        out[(v["scenario"], v["profile"], v["engine"])] = ports(v)
    return [(k, out[k]) for k in out], r


def main():
    (a, ra), (b, rb) = cells(sys.argv[1]), cells(sys.argv[2])
    print(f"{sys.argv[1]}: {len(a)} cells {ra['summary']}")
    print(f"{sys.argv[2]}: {len(b)} cells {rb['summary']}")
    bd = dict(b)
    differing, raced = [], 0
    for k, x in a:
        y = bd.get(k)
        if y is None:
            differing.append((k, "missing in B"))
            continue
        if x != y:
            fields = sorted(f for f in set(x) | set(y) if x.get(f) != y.get(f))
            if fields == ["clientDetail"] and RACE in (x.get("clientDetail"), y.get("clientDetail")):
                raced += 1
                continue
            differing.append((k, {f: (x.get(f), y.get(f)) for f in fields}))
    for k in bd:
        if k not in dict(a):
            differing.append((k, "missing in A"))
    for k, d in differing[:20]:
        print("DIFF", "/".join(k), d)
    print(f"equal cells: {len(a) - len(differing)} of {len(a)} (of which {raced} differ only by the TLS 1.3 "
          f"client-certificate alert race in clientDetail); differing: {len(differing)}")
    sys.exit(1 if differing else 0)


main()
