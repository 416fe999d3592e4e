#!/usr/bin/env python3
"""Lab 4 — Where to pin: leaf, intermediate or root.  REFERENCE SOLUTION (instructors only).

Grade it:  pinlab lab check 4 -- python3 labs/04-where-to-pin/instructor/solution.py
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
        # Any certificate of the chain OpenSSL validated: the leaf, the intermediate, and the root from the
        # trust store (a server does not send its root, so the presented chain would not hold it).
        hashes = [labtls.sha256_b64(labtls.spki(c)) for c in labtls.validated_chain(tls)]
        if not any(h in cell.pins for h in hashes):
            labtls.close(tls)
            labtls.refuse("pin mismatch: no key of the validated chain is pinned (%s)" % ", ".join(hashes))

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
