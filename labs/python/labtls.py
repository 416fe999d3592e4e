"""Plumbing shared by the PinningLab lab clients (Python standard library only).

Nothing in here decides whether to trust a server: that is the lab file's job. This module reads the cell's
settings from the environment `pinlab` sets (PINLAB_HOST, PINLAB_PORT, PINLAB_CA, PINLAB_PINS, ...), walks DER
just enough to find a certificate's SubjectPublicKeyInfo, gets the chains out of a connected socket, and sends
the one HTTP request that counts as "accepted".

Exit status: 0 = the client trusted the server and sent its request; 1 = it refused (reason on stderr).
"""
import base64
import hashlib
import os
import socket
import ssl
import sys

TIMEOUT = 8.0


class Cell:
    """The settings of one graded cell, from the environment `pinlab lab check` / `pinlab check` sets."""

    def __init__(self):
        env = os.environ
        self.host = env.get("PINLAB_HOST", "localhost")
        self.port = int(env.get("PINLAB_PORT", "443"))
        self.ca = env.get("PINLAB_CA", "")
        # SHA-256 pins, base64, comma-separated. Under the profile `none` this is empty.
        self.pins = [p for p in env.get("PINLAB_PINS", "").split(",") if p]
        # SHA-256 (hex) of the pinned identities' whole DER *certificates*.
        self.certpins_hex = [p for p in env.get("PINLAB_CERTPINS_HEX", "").split(",") if p]
        self.client_cert = env.get("PINLAB_CLIENT_CERT", "")
        self.client_key = env.get("PINLAB_CLIENT_KEY", "")
        self.profile = env.get("PINLAB_PROFILE", "")
        self.scenario = env.get("PINLAB_SCENARIO", "")
        # The OCSP responder and CRL the server's certificate names, on the lab's responder (http://127.0.0.1:PORT/...);
        # empty when the certificate names none, or when nothing answers for them in this scenario.
        self.ocsp_url = env.get("PINLAB_OCSP_URL", "")
        self.crl_url = env.get("PINLAB_CRL_URL", "")


def refuse(message, tls=None):
    """Refuse the server: close the connection (if given) without sending anything, say why on stderr, exit 1."""
    if tls is not None:
        close(tls)
    sys.stderr.write("refused: " + message + "\n")
    sys.exit(1)


def close(tls):
    """Close the connection without sending anything: a TLS close_notify, then the socket."""
    try:
        tls.settimeout(1.0)
        tls.unwrap().close()
    except (ssl.SSLError, OSError, ValueError):
        tls.close()


def connect_tcp(cell):
    return socket.create_connection((cell.host, cell.port), timeout=TIMEOUT)


def handshake(context, cell):
    """TCP connect and TLS handshake with SNI = the host. A verification failure refuses (exit 1)."""
    raw = connect_tcp(cell)
    try:
        return context.wrap_socket(raw, server_hostname=cell.host)
    except ssl.SSLCertVerificationError as e:
        raw.close()
        refuse("certificate verify failed: " + str(e.verify_message or e))
    except (ssl.SSLError, OSError) as e:
        raw.close()
        refuse("TLS handshake failed: " + str(e))


def send_request(tls, cell):
    """Send the request (this is what the server counts as 'accepted') and read the status line."""
    request = "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % cell.host
    try:
        tls.sendall(request.encode())
        reply = tls.recv(4096)
    except (ssl.SSLError, OSError) as e:
        refuse("the server ended the connection: " + str(e))
    if not reply.startswith(b"HTTP/1."):
        refuse("no HTTP response from the server")
    print(reply.split(b"\r\n", 1)[0].decode(errors="replace"))
    tls.close()
    sys.exit(0)


# ---- chains -----------------------------------------------------------------------------------------------------

def _der_list(items):
    out = []
    for c in items:
        out.append(c if isinstance(c, (bytes, bytearray)) else c.public_bytes(2))  # 2 = _ssl.ENCODING_DER
    return out


def presented_chain(tls):
    """The certificates exactly as the server sent them (DER), in the server's order. NOT validated."""
    if hasattr(tls, "get_unverified_chain"):  # Python 3.13+
        return _der_list(tls.get_unverified_chain() or [])
    return _der_list(tls._sslobj.get_unverified_chain() or [])  # Python 3.10-3.12: same method, private


def validated_chain(tls):
    """The chain OpenSSL built and verified: leaf first, the trust anchor (root) last, even if it was not sent."""
    if hasattr(tls, "get_verified_chain"):  # Python 3.13+
        return _der_list(tls.get_verified_chain() or [])
    return _der_list(tls._sslobj.get_verified_chain() or [])  # Python 3.10-3.12: same method, private


def leaf(tls):
    """The server's own certificate (DER)."""
    return tls.getpeercert(binary_form=True)


# ---- DER, just enough ----------------------------------------------------------------------------------------------

def _tlv(der, i):
    """(tag, content start, end) of the DER element at offset i."""
    tag = der[i]
    n = der[i + 1]
    j = i + 2
    if n & 0x80:
        count = n & 0x7F
        n = int.from_bytes(der[j:j + count], "big")
        j += count
    return tag, j, j + n


def _children(der, start, end):
    out = []
    i = start
    while i < end:
        tag, s, e = _tlv(der, i)
        out.append((tag, i, s, e))
        i = e
    return out


def spki(cert_der):
    """The DER SubjectPublicKeyInfo of a certificate: the algorithm identifier AND the key, as one SEQUENCE.

    This is what OkHttp, TrustKit, curl --pinnedpubkey, Android and `openssl x509 -pubkey | openssl pkey -pubin
    -outform der | openssl dgst -sha256` hash."""
    _, s, e = _tlv(cert_der, 0)                       # Certificate
    _, s, e = _tlv(cert_der, s)                       # TBSCertificate
    fields = _children(cert_der, s, e)
    if fields[0][0] == 0xA0:                          # [0] version
        fields = fields[1:]
    _, start, _, end = fields[5]                      # serial, signature, issuer, validity, subject, SPKI
    return bytes(cert_der[start:end])


def raw_public_key(cert_der):
    """The bare key bytes inside the SPKI's BIT STRING, without the algorithm identifier: what Apple's
    SecKeyCopyExternalRepresentation returns (EC: 04||X||Y; RSA: the PKCS#1 RSAPublicKey)."""
    der = spki(cert_der)
    _, s, e = _tlv(der, 0)
    parts = _children(der, s, e)
    _, _, bs, be = parts[1]                           # BIT STRING
    return bytes(der[bs + 1:be])                      # skip the "unused bits" byte


def sha256_b64(data):
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


# ---- revocation -----------------------------------------------------------------------------------------------------

def load_crl(context, url):
    """Fetch the CRL at url (DER, from the lab's responder) and add it to the context's trust store, where OpenSSL
    looks for CRLs once ssl.VERIFY_CRL_CHECK_LEAF is set. A CRL that cannot be fetched refuses (exit 1)."""
    import tempfile
    import urllib.request
    try:
        der = urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=TIMEOUT).read()
    except OSError as e:
        refuse("cannot fetch the CRL at %s: %s" % (url, e))
    pem = "-----BEGIN X509 CRL-----\n" + base64.encodebytes(der).decode() + "-----END X509 CRL-----\n"
    with tempfile.NamedTemporaryFile("w", suffix=".pem") as f:
        f.write(pem)
        f.flush()
        try:
            context.load_verify_locations(cafile=f.name)
        except ssl.SSLError as e:
            refuse("the file at %s is not a CRL: %s" % (url, e))


def publishes_status(tls):
    """Whether the server's (validated) certificate names a CRL distribution point or an OCSP responder."""
    cert = tls.getpeercert() or {}
    return bool(cert.get("crlDistributionPoints") or cert.get("OCSP"))

