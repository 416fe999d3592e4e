#!/usr/bin/env python3
"""Lab 7 — Mutual TLS: client certificates.  REFERENCE SOLUTION (instructors only).

Grade it:  pinlab lab check 7 -- python3 labs/07-mutual-tls/instructor/solution.py
"""
import os
import ssl
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import labtls  # noqa: E402  (plumbing: environment, DER, chains, the request)


def main():
    cell = labtls.Cell()
    context = ssl.create_default_context(cafile=cell.ca)
    if cell.client_cert:
        # The certificate (with its issuers below the root) and the key that proves we hold it. The stdlib cannot
        # read a PKCS#12 bundle; the Swift solution reads {client.p12} with its password instead.
        context.load_cert_chain(certfile=cell.client_cert, keyfile=cell.client_key)
    tls = labtls.handshake(context, cell)

    if cell.pins:
        got = labtls.sha256_b64(labtls.spki(labtls.leaf(tls)))
        if got not in cell.pins:
            labtls.close(tls)
            labtls.refuse("pin mismatch: the server's key %s is not pinned" % got)

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
