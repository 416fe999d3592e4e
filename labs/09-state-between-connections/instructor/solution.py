#!/usr/bin/env python3
"""Lab 9 — State between connections.  REFERENCE SOLUTION.

Grade it:  pinlab lab check 9 -- python3 labs/09-state-between-connections/instructor/solution.py {url.1} {url.2}

The {url.1} {url.2} placeholders tell pinlab to run both connections of a cell in this one process: the client
keeps its TLS session between them, as an app does. The steps come from PINLAB_STEPS; one line per step on
standard output says `accepted` or `refused`.
"""
import json
import os
import socket
import ssl
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import labtls  # noqa: E402  (plumbing: DER, the SPKI, hashes)


def pins_apply(host):
    """Whether the pins are declared for `host` (PINLAB_PINS_DOMAIN, with PINLAB_PINS_SUBDOMAINS), in normal form."""
    domain = os.environ.get("PINLAB_PINS_DOMAIN", "")
    if not domain:
        return True
    host = host.lower()[:-1] if host.endswith(".") else host.lower()
    subdomains = os.environ.get("PINLAB_PINS_SUBDOMAINS", "") == "true"
    return host == domain or (subdomains and host.endswith("." + domain))


def connect(context, step, session):
    """One connection; returns the session to keep for the next one. Raises to refuse."""
    raw = socket.create_connection((step["ip"], step["port"]), timeout=labtls.TIMEOUT)
    tls = context.wrap_socket(raw, server_hostname=step["host"], session=session)
    pins = step["pins"] if pins_apply(step["host"]) else []
    # Checked on every connection, resumed or not: on a resumed connection no certificate crosses the wire and the
    # TLS library verifies nothing, but getpeercert(True) is the certificate the session was made with.
    if pins:
        got = labtls.sha256_b64(labtls.spki(tls.getpeercert(binary_form=True)))
        if got not in pins:
            labtls.close(tls)
            raise ssl.SSLError("pin mismatch: the server's key %s is not pinned" % got)
    tls.sendall(("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % step["host"]).encode())
    while tls.recv(16384):
        pass
    kept = tls.session  # TLS 1.3 tickets arrive with the response: take the session once it is read
    tls.close()
    return kept


def main():
    steps = json.loads(os.environ["PINLAB_STEPS"])
    context = ssl.create_default_context(cafile=os.environ["PINLAB_CA"])
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    session = None
    for step in steps:
        try:
            session = connect(context, step, session) or session
            print("accepted", flush=True)
        except (OSError, ssl.SSLError) as error:
            sys.stderr.write("step %d refused: %s\n" % (step["step"], error))
            print("refused", flush=True)


if __name__ == "__main__":
    main()
