#!/usr/bin/env python3
"""Lab 6 — Pinning adds to validation, never replaces it.  REFERENCE SOLUTION (instructors only).

Grade it:  pinlab lab check 6 -- python3 labs/06-pin-plus-validation/instructor/solution.py
"""
import os
import ssl
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import labtls  # noqa: E402  (plumbing: environment, DER, chains, the request)


def main():
    cell = labtls.Cell()
    # Validation first (trusted chain, validity dates, host name), then the pin narrows what validation allowed.
    context = ssl.create_default_context(cafile=cell.ca)
    tls = labtls.handshake(context, cell)

    if cell.pins:
        got = labtls.sha256_b64(labtls.spki(labtls.leaf(tls)))
        if got not in cell.pins:
            labtls.close(tls)
            labtls.refuse("pin mismatch: the server's key %s is not pinned" % got)

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
