#!/usr/bin/env python3
"""Lab 10 — When a pinned key is stolen.  STARTER (the lab's mistake is in place).

Grade it:  pinlab lab check 10 -- python3 labs/10-when-a-pinned-key-is-stolen/starter.py
"""
import os
import ssl
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import labtls  # noqa: E402  (plumbing: environment, DER, chains, the request)


def main():
    cell = labtls.Cell()
    context = ssl.create_default_context(cafile=cell.ca)
    # TODO (1): the certificate may name a CRL (cell.crl_url: where the lab serves it). When it does, fetch it with
    # labtls.load_crl(context, cell.crl_url) and add ssl.VERIFY_CRL_CHECK_LEAF to context.verify_flags, so that
    # OpenSSL refuses a revoked certificate inside the handshake.
    tls = labtls.handshake(context, cell)

    if cell.pins:
        got = labtls.sha256_b64(labtls.spki(labtls.leaf(tls)))
        if got not in cell.pins:
            labtls.refuse("pin mismatch: the server's key %s is not pinned" % got, tls)

    # TODO (2): hard-fail. A certificate that names a CRL or an OCSP responder (labtls.publishes_status(tls))
    # whose status could not be fetched (no cell.crl_url) has no proof of good standing: refuse it.

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
