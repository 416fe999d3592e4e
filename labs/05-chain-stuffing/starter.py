#!/usr/bin/env python3
"""Lab 5 — Chain stuffing and name collisions.  STARTER (the lab's mistake is in place).

Grade it:  pinlab lab check 5 -- python3 labs/05-chain-stuffing/starter.py
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
        # TODO: this looks for a pinned key among the certificates the server SENT. Anyone can send any public
        # certificate: an interception proxy appends the genuine ones after its own leaf. Check the pins against
        # the chain the verifier actually built and validated instead (labtls.validated_chain).
        hashes = [labtls.sha256_b64(labtls.spki(c)) for c in labtls.presented_chain(tls)]
        if not any(h in cell.pins for h in hashes):
            labtls.close(tls)
            labtls.refuse("pin mismatch: no key the server sent is pinned")

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
