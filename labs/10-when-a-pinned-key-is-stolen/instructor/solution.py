#!/usr/bin/env python3
"""Lab 10 — When a pinned key is stolen.  REFERENCE SOLUTION (instructors only).

Grade it:  pinlab lab check 10 -- python3 labs/10-when-a-pinned-key-is-stolen/instructor/solution.py
"""
import os
import ssl
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import labtls  # noqa: E402  (plumbing: environment, DER, chains, the request)


def main():
    cell = labtls.Cell()
    context = ssl.create_default_context(cafile=cell.ca)
    if cell.crl_url:
        # The certificate's CRL, fetched before the handshake; OpenSSL refuses a listed certificate, a CRL that is
        # not current ("CRL has expired") or one its issuer did not sign.
        labtls.load_crl(context, cell.crl_url)
        context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    tls = labtls.handshake(context, cell)

    if cell.pins:
        got = labtls.sha256_b64(labtls.spki(labtls.leaf(tls)))
        if got not in cell.pins:
            labtls.refuse("pin mismatch: the server's key %s is not pinned" % got, tls)

    if not cell.crl_url and labtls.publishes_status(tls):
        # Hard-fail: the certificate publishes revocation status, and none could be fetched (an attacker who holds
        # a revoked key blocks the revocation hosts too).
        labtls.refuse("the certificate names a CRL or OCSP responder, and no current status could be fetched", tls)

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
