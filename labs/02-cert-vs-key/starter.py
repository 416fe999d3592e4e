#!/usr/bin/env python3
"""Lab 2 — Certificate vs public-key pinning.  STARTER (the lab's mistake is in place).

Grade it:  pinlab lab check 2 -- python3 labs/02-cert-vs-key/starter.py
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
        # TODO: this pins the whole certificate (the SHA-256 of its DER bytes, from cell.certpins_hex). Every
        # renewal issues a new certificate, even with the same key, and this app then refuses its own server.
        # The team's policy is public-key pinning: compare the SHA-256 of the leaf's SubjectPublicKeyInfo
        # (labtls.spki, labtls.sha256_b64) with cell.pins instead.
        got = labtls.sha256_hex(labtls.leaf(tls))
        if got not in cell.certpins_hex:
            labtls.close(tls)
            labtls.refuse("pin mismatch: certificate %s is not pinned" % got)

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
