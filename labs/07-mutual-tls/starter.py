#!/usr/bin/env python3
"""Lab 7 — Mutual TLS: client certificates.  STARTER (the lab's mistake is in place).

Grade it:  pinlab lab check 7 -- python3 labs/07-mutual-tls/starter.py
"""
import os
import ssl
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import labtls  # noqa: E402  (plumbing: environment, DER, chains, the request)


def main():
    cell = labtls.Cell()
    context = ssl.create_default_context(cafile=cell.ca)
    # TODO: the server asks for a client certificate and this client never loads one. When the cell gives one
    # (cell.client_cert: the certificate and its issuers, PEM; cell.client_key: its private key, PEM), load it
    # with context.load_cert_chain(...) so the handshake can present it.
    tls = labtls.handshake(context, cell)

    if cell.pins:
        got = labtls.sha256_b64(labtls.spki(labtls.leaf(tls)))
        if got not in cell.pins:
            labtls.close(tls)
            labtls.refuse("pin mismatch: the server's key %s is not pinned" % got)

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
