#!/usr/bin/env python3
"""A pinning client made with Python's ssl module that keeps one TLS session across the connections of a cell.

Run by pinlab as a command client whose template names the steps ({url.1}, {url.2}): the steps come from
PINLAB_STEPS (a JSON array: host, ip, port, pins as base64 SHA-256 of the SPKI, empty where the step's pins are not
in force) and the trust store from PINLAB_CA. Every step connects to ip:port with SNI and host check `host`,
offering the session the previous step left (`wrap_socket(session=...)`), and prints one answer line: `accepted`
when it sent its request, `refused` when it did not.

Where the pin check lives is the argument:
  every-connection     checks the pins on every connection, resumed or not (the certificate of a resumed session
                       is the one it was made with: `getpeercert` returns it)
  full-handshake-only  checks them only when `not ssock.session_reused` (as a certificate callback would): the
                       mistake resumption-after-unpinned-handshake catches
"""
import base64
import hashlib
import json
import os
import socket
import ssl
import sys


def der_element(data, offset):
    """(tag, start of contents, end of element) of the DER element at offset."""
    tag = data[offset]
    length = data[offset + 1]
    start = offset + 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(data[start:start + count], "big")
        start += count
    return tag, start, start + length


def spki_sha256(certificate_der):
    """SHA-256 of the certificate's SubjectPublicKeyInfo, as curl's --pinnedpubkey and HPKP compute it."""
    _, cert_start, _ = der_element(certificate_der, 0)          # Certificate
    _, tbs_start, tbs_end = der_element(certificate_der, cert_start)  # TBSCertificate
    offset = tbs_start
    fields = []
    while offset < tbs_end:
        tag, _, end = der_element(certificate_der, offset)
        fields.append((tag, offset, end))
        offset = end
    if fields[0][0] == 0xA0:  # [0] version
        fields = fields[1:]
    _, spki_offset, spki_end = fields[5]  # serial, signature, issuer, validity, subject, subjectPublicKeyInfo
    return hashlib.sha256(certificate_der[spki_offset:spki_end]).digest()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "every-connection"
    if mode not in ("every-connection", "full-handshake-only"):
        print(f"usage: {sys.argv[0]} every-connection|full-handshake-only", file=sys.stderr)
        return 2
    steps = json.loads(os.environ["PINLAB_STEPS"])
    context = ssl.create_default_context(cafile=os.environ["PINLAB_CA"])
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    session = None
    for step in steps:
        pins = {base64.b64decode(p) for p in step["pins"]}
        try:
            with socket.create_connection((step["ip"], step["port"]), timeout=5) as raw:
                with context.wrap_socket(raw, server_hostname=step["host"], session=session) as tls:
                    checks = mode == "every-connection" or not tls.session_reused
                    if pins and checks and spki_sha256(tls.getpeercert(binary_form=True)) not in pins:
                        raise ssl.SSLError(f"step {step['step']}: no pin matches (resumed: {tls.session_reused})")
                    tls.sendall(f"GET / HTTP/1.1\r\nHost: {step['host']}\r\nConnection: close\r\n\r\n".encode())
                    while tls.recv(16384):
                        pass
                    # TLS 1.3 tickets arrive after the handshake: the session is taken once the response is read.
                    session = tls.session
            print("accepted", flush=True)
        except (OSError, ssl.SSLError) as error:
            print(f"step {step['step']}: {error}", file=sys.stderr)
            print("refused", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
