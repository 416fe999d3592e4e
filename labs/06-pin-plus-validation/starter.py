#!/usr/bin/env python3
"""Lab 6 — Pinning adds to validation, never replaces it.  STARTER (the lab's mistake is in place).

Grade it:  pinlab lab check 6 -- python3 labs/06-pin-plus-validation/starter.py
"""
import os
import ssl
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import labtls  # noqa: E402  (plumbing: environment, DER, chains, the request)


def main():
    cell = labtls.Cell()
    # TODO: "we pin, so we do not need the CA": validation is switched off here, so an expired certificate, a
    # certificate for another host, or a self-signed one carrying the pinned key all get through. Keep full
    # validation (ssl.create_default_context(cafile=cell.ca): chain, dates, host name) AND check the pin.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    tls = labtls.handshake(context, cell)

    if cell.pins:
        got = labtls.sha256_b64(labtls.spki(labtls.leaf(tls)))
        if got not in cell.pins:
            labtls.close(tls)
            labtls.refuse("pin mismatch: the server's key %s is not pinned" % got)

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
