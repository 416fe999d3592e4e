#!/usr/bin/env python3
"""Lab 8 — Hashing the right bytes: SPKI vs the bare key.  REFERENCE SOLUTION (instructors only).

Grade it:  pinlab lab check 8 -- python3 labs/08-hash-the-right-bytes/instructor/solution.py
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
        # The SubjectPublicKeyInfo: AlgorithmIdentifier (key type, curve) + the key. On Apple platforms, prepend the
        # ASN.1 header for the key type to SecKeyCopyExternalRepresentation's bytes (TrustKit keeps one per type).
        got = labtls.sha256_b64(labtls.spki(labtls.leaf(tls)))
        if got not in cell.pins:
            labtls.close(tls)
            labtls.refuse("pin mismatch: the server's key %s is not pinned" % got)

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
