#!/usr/bin/env python3
"""Lab 1 — Why pin: the intercepting proxy.  STARTER (the lab's mistake is in place).

Grade it:  pinlab lab check 1 -- python3 labs/01-why-pin/starter.py
"""
import os
import ssl
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import labtls  # noqa: E402  (plumbing: environment, DER, chains, the request)


def main():
    cell = labtls.Cell()
    # Validation: the chain must reach a root in {ca}, be in date, and name the host. Good and necessary...
    context = ssl.create_default_context(cafile=cell.ca)
    tls = labtls.handshake(context, cell)

    # TODO: ...but the device also trusts whatever root its user installed (a proxy's). Check that the server's
    # key is one the app expects: hash the leaf's SubjectPublicKeyInfo (labtls.spki, labtls.sha256_b64) and
    # refuse with labtls.refuse("pin mismatch: ...", tls) unless it is one of cell.pins (no pins: no pinning).

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
