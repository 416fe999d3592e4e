#!/usr/bin/env python3
"""Lab 4 — Where to pin: leaf, intermediate or root.  STARTER (the lab's mistake is in place).

Grade it:  pinlab lab check 4 -- python3 labs/04-where-to-pin/starter.py
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
        # TODO: the pin may sit on the leaf, on the issuing intermediate or on the root, but this only looks at
        # the leaf. Look at every certificate of the VALIDATED chain (labtls.validated_chain(tls): leaf first,
        # the trust anchor last, even when the server did not send it) and accept if any of their SPKI hashes is
        # one of cell.pins.
        got = labtls.sha256_b64(labtls.spki(labtls.leaf(tls)))
        if got not in cell.pins:
            labtls.close(tls)
            labtls.refuse("pin mismatch: the server's key %s is not pinned" % got)

    labtls.send_request(tls, cell)


if __name__ == "__main__":
    main()
