#!/usr/bin/env python3
"""Lab 8 — Hashing the right bytes: SPKI vs the bare key.  STARTER (the lab's mistake is in place).

Grade it:  pinlab lab check 8 -- python3 labs/08-hash-the-right-bytes/starter.py
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
        # TODO: this hashes the bare key bytes (what Apple's SecKeyCopyExternalRepresentation returns: the EC
        # point 04||X||Y, or the PKCS#1 RSAPublicKey). Pins everywhere else (openssl, OkHttp, TrustKit, curl) are
        # the SHA-256 of the whole DER SubjectPublicKeyInfo: the algorithm identifier AND the key (labtls.spki).
        got = labtls.sha256_b64(labtls.raw_public_key(labtls.leaf(tls)))
        if got not in cell.pins:
            labtls.close(tls)
            labtls.refuse("pin mismatch: the server's key %s is not pinned" % got)

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
