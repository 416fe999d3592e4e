#!/usr/bin/env python3
"""A pinning HTTPS client in Python's `ssl`, as a PinningLab batch harness and as a per-cell command.

Batch (one process for every cell):   pinlab check --batch --batch-steps -- python3 pinlab_batch.py
    reads the batch document on standard input (or from the file named by $PINLAB_BATCH) and prints one JSON answer
    per cell on standard output: {"id": …, "claim": "accepted"|"refused", "detail": …, "category": …}. A cell of
    several connections (`steps`, with --batch-steps) is made with one context, offering each step the session the
    previous one left, and answered per step ({"id": …, "step": N, …}); pins are checked on every connection, a
    resumed one against the chain its session was validated with.
Per cell (one process per cell):      pinlab check -- python3 pinlab_batch.py --cell {url} {ca} {profile} \
                                          '[--pins {pins}]' '[--cert {client.cert}]' '[--key {client.key}]' \
                                          '[--pin-domain {pins.domain}]' '[--pin-subdomains {pins.subdomains}]'
    exit status 0 = accepted, 1 = refused.

Both modes judge a cell with the same function, `judge`: validate the chain and the host name with the trust file,
then — when the host is in the pins' scope (`pins.domain`, `pins.includeSubdomains`) — match the pins against the
*validated* chain (the chain OpenSSL built to a trusted root, not the chain the
server sent), and only then send the request. The validated chain comes from `SSLSocket.get_verified_chain()`
(public from Python 3.13; the same C method, `_sslobj.get_verified_chain()`, exists since 3.10). On older Pythons
only the leaf certificate is available (`getpeercert(binary_form=True)`): this harness then matches leaf pins against
it and answers cells pinning an intermediate or root "refused", with the reason.

The TLS floor is App Transport Security's, as the reference clients accept it (see `ats_context`): Python 3.10 and
later leave every TLS 1.2 suite with a SHA-1 record MAC out of the default context (`!SHA1`), which refuses the
`ats-floor` server (TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, a suite ATS allows).
"""
import base64
import hashlib
import json
import os
import socket
import ssl
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit


def _der_element(data, i):
    """(tag, start of content, end of content) of the DER element at i."""
    tag = data[i]
    length = data[i + 1]
    i += 2
    if length & 0x80:
        n = length & 0x7F
        length = int.from_bytes(data[i:i + n], "big")
        i += n
    return tag, i, i + length


def spki_der(cert_der):
    """The SubjectPublicKeyInfo (DER) of a DER certificate: the 7th field of tbsCertificate (6th without version)."""
    _, c, _ = _der_element(cert_der, 0)          # Certificate SEQUENCE
    _, t, t_end = _der_element(cert_der, c)      # tbsCertificate SEQUENCE
    fields = []
    i = t
    while i < t_end:
        tag, s, e = _der_element(cert_der, i)
        fields.append((tag, i, e))
        i = e
    if fields[0][0] == 0xA0:                      # [0] version
        fields = fields[1:]
    _, start, end = fields[5]                     # serial, signature, issuer, validity, subject, spki
    return cert_der[start:end]


def verified_chain_der(tls):
    """The validated chain, leaf first, as DER; None when this Python cannot give it."""
    getter = getattr(tls, "get_verified_chain", None) or getattr(getattr(tls, "_sslobj", None), "get_verified_chain", None)
    if getter is None:
        return None
    chain = getter()
    return [c if isinstance(c, bytes) else c.public_bytes(ssl._ssl.ENCODING_DER) for c in chain]


def in_scope(host, domain, include_subdomains):
    """Whether pins declared for `domain` (and its subdomains when `include_subdomains`) apply to `host`."""
    if not domain:
        return True
    host, domain = host.lower().rstrip("."), domain.lower().rstrip(".")
    return host == domain or (include_subdomains and host.endswith("." + domain))


# App Transport Security's TLS 1.2 suites: forward-secret ECDHE only, AES-GCM or AES-CBC (with SHA-384, SHA-256 or
# SHA-1 record MACs) and ChaCha20; TLS 1.3's suites are not affected by set_ciphers. Security level 2 keeps
# OpenSSL's key and signature floor (RSA >= 2048 bits, no SHA-1 signatures), as Python's default context does.
ATS_CIPHERS = "@SECLEVEL=2:ECDHE+AESGCM:ECDHE+CHACHA20:ECDHE+AES:!aNULL:!eNULL:!MD5:!DSS:!PSK:!SRP:!CAMELLIA:!ARIA:!AESCCM"


def ats_context(ca):
    """Python's default client context (chain and host-name validation with `ca`), at ATS's floor: TLS 1.2 or later,
    the suites of ATS_CIPHERS."""
    ctx = ssl.create_default_context(cafile=ca)
    # A trusted intermediate is an anchor, as on Apple platforms, Android, the JDK and Go (Python's default from 3.13).
    ctx.verify_flags |= getattr(ssl, "VERIFY_X509_PARTIAL_CHAIN", 0)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(ATS_CIPHERS)
    return ctx


def judge(host, port, ca, profile, pins, cert=None, key=None, timeout=10.0, domain="", include_subdomains=False):
    """Connects, validates, pins (when `host` is in the pins' scope), and sends GET / only when all is right.
    Returns (claim, category, detail)."""
    ctx = ats_context(ca)
    if cert and key:
        ctx.load_cert_chain(cert, key)
    return connect(ctx, host, port, profile, pins, timeout, domain, include_subdomains)[:3]


def connect(ctx, host, port, profile, pins, timeout=10.0, domain="", include_subdomains=False, ip="127.0.0.1",
            resume=None):
    """One connection with `ctx`, offering `resume` — (session, the validated chain it was made with) from an earlier
    connection of the same cell — and checking the pins on every connection, resumed or not: a resumed session is
    checked against the chain it was validated with, never waved through. Returns (claim, category, detail, resume)
    where the last is what the next connection may offer (None when nothing was made)."""
    certificate_pins = profile == "leaf-cert"
    if not in_scope(host, domain, include_subdomains):
        pins = []                                 # pinned for other hosts: this one is validated only
    try:
        with socket.create_connection((ip, port), timeout=timeout) as raw:
            # A fully qualified name's trailing dot is not part of the SNI (RFC 6066) nor of the certificate's names.
            with ctx.wrap_socket(raw, server_hostname=host[:-1] if host.endswith(".") else host,
                                 session=resume[0] if resume else None) as tls:
                if tls.session_reused:
                    chain = resume[1]                 # OpenSSL keeps no verified chain on a resumed session
                else:
                    chain = verified_chain_der(tls)
                    if chain is None and profile in ("leaf-cert", "leaf-spki", "leaf-spki+backup"):
                        chain = [tls.getpeercert(binary_form=True)]
                if pins:
                    if chain is None:
                        return "refused", "other", "this Python gives the leaf only (no get_verified_chain): cannot match %s pins" % profile, None
                    have = {base64.b64encode(hashlib.sha256(c if certificate_pins else spki_der(c)).digest()).decode() for c in chain}
                    if not have & set(pins):
                        return "refused", "pin-mismatch", "no pin matches the validated chain%s" % (" (resumed session)" if tls.session_reused else ""), None
                tls.sendall(("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host).encode())
                response = b""
                while True:                           # to the end: TLS 1.3 tickets arrive after the handshake
                    data = tls.recv(16384)
                    if not data:
                        break
                    response += data
                status = response.split(b"\r\n", 1)[0].decode(errors="replace")
                if not status.startswith("HTTP/"):
                    return "refused", "other", "no HTTP response (%r)" % status, None
                return "accepted", None, status, (tls.session, chain)
    except ssl.SSLCertVerificationError as e:
        category = "hostname" if "hostname" in str(e).lower() or "match" in str(e).lower() else "chain-invalid"
        return "refused", category, str(e)
    except ssl.SSLError as e:
        return "refused", "protocol", str(e)
    except (socket.timeout, TimeoutError) as e:
        return "refused", "timeout", str(e) or "timed out"
    except OSError as e:
        return "refused", "other", str(e)


def judge_steps(cell, timeout):
    """A cell of several connections (`pinlab check --batch --batch-steps`): one context — one session cache — for
    all its steps, made in order; one answer per step."""
    identity = cell.get("clientIdentity") or {}
    ctx = ats_context(cell["trustFile"])
    if identity:
        ctx.load_cert_chain(identity["certificateFile"], identity["keyFile"])
    answers, resume = [], None
    for step in cell["steps"]:
        t0 = time.monotonic()
        claim, category, detail, made = connect(
            ctx, step["host"], step["port"], cell["profile"], step["pins"]["base64"], timeout,
            step["pins"].get("domain", ""), step["pins"].get("includeSubdomains", False), ip=step["ip"], resume=resume)
        resume = made or resume
        answer = {"id": cell["id"], "step": step["step"], "claim": claim, "detail": detail,
                  "milliseconds": (time.monotonic() - t0) * 1000}
        if category:
            answer["category"] = category
        answers.append(answer)
    return answers


def judge_cell(cell, timeout):
    if cell.get("steps"):
        return judge_steps(cell, timeout)
    identity = cell.get("clientIdentity") or {}
    t0 = time.monotonic()
    claim, category, detail = judge(
        cell["host"], cell["port"], cell["trustFile"], cell["profile"], cell["pins"]["base64"],
        identity.get("certificateFile"), identity.get("keyFile"), timeout,
        cell["pins"].get("domain", ""), cell["pins"].get("includeSubdomains", False))
    answer = {"id": cell["id"], "claim": claim, "detail": detail, "milliseconds": (time.monotonic() - t0) * 1000}
    if category:
        answer["category"] = category
    return [answer]


def batch():
    path = os.environ.get("PINLAB_BATCH")
    document = json.load(open(path)) if path else json.load(sys.stdin)
    timeout = float(document.get("cellTimeoutSeconds", 10))
    lock = threading.Lock()

    def run(cell):
        answers = judge_cell(cell, timeout)
        with lock:                                # whole lines at a time
            sys.stdout.write("".join(json.dumps(a) + "\n" for a in answers))
            sys.stdout.flush()

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(run, document["cells"]))


def cell(args):
    url, ca, profile = args[0], args[1], args[2]
    opts = dict(zip(args[3::2], args[4::2]))
    parts = urlsplit(url)
    claim, category, detail = judge(
        parts.hostname, parts.port, ca, profile, [p for p in opts.get("--pins", "").split(",") if p],
        opts.get("--cert"), opts.get("--key"), domain=opts.get("--pin-domain", ""),
        include_subdomains=opts.get("--pin-subdomains") == "true")
    print("%s (%s): %s" % (claim, category or "-", detail), file=sys.stderr)
    return 0 if claim == "accepted" else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--cell":
        sys.exit(cell(sys.argv[2:]))
    batch()
