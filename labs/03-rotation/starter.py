#!/usr/bin/env python3
"""Lab 3 — Rotation without an outage.  STARTER (the lab's mistake is in place).

Grade it:  pinlab lab check 3 -- python3 labs/03-rotation/starter.py
"""
import os
import ssl
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import labtls  # noqa: E402  (plumbing: environment, DER, chains, the request)


def main():
    cell = labtls.Cell()
    context = ssl.create_default_context(cafile=cell.ca)
    tls = labtls.handshake(context, cell)

    if cell.pins:
        got = labtls.sha256_b64(labtls.spki(labtls.leaf(tls)))
        # TODO: the app ships two pins (today's key K1, then the backup key K2 published for the next re-key),
        # but only the first one is honoured. Accept the server when its key matches ANY pin in cell.pins.
        if got != cell.pins[0]:
            labtls.close(tls)
            labtls.refuse("pin mismatch: the server's key %s is not pinned" % got)

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
