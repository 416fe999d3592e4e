#!/usr/bin/env python3
"""Lab 5 — Chain stuffing and name collisions.  REFERENCE SOLUTION (instructors only).

Grade it:  pinlab lab check 5 -- python3 labs/05-chain-stuffing/instructor/solution.py
"""
import os
import ssl
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import labtls  # noqa: E402  (plumbing: environment, DER, chains, the request)


def main():
    cell = labtls.Cell()
    context = ssl.create_default_context(cafile=cell.ca)
    tls = labtls.handshake(context, cell)

    if cell.pins:
        # Only the validated chain proves anything: each of its certificates is signed by the next one up to a
        # trusted root. Extra certificates on the wire are ignored, and a twin with a copied name has another key.
        hashes = [labtls.sha256_b64(labtls.spki(c)) for c in labtls.validated_chain(tls)]
        if not any(h in cell.pins for h in hashes):
            labtls.close(tls)
            labtls.refuse("pin mismatch: no key of the validated chain is pinned (%s)" % ", ".join(hashes))

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
