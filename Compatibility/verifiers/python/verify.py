"""Python's ssl as one verifier stack of PinningLab's compatibility suite: a handshake with a default client context
(PROTOCOL_TLS_CLIENT: verification and host-name check on), the case's roots only.
Usage: python3 verify.py --mode handshake CASES.json   (one JSON line per case)"""
import base64, json, socket, ssl, sys


def verified_chain(tls):
    """The chain OpenSSL verified (SSL_get0_verified_chain), leaf first, as base64 DER: SSLSocket.get_verified_chain()
    from Python 3.13; before it (3.10-3.12) the same C method exists only on the private _sslobj, which is used
    then. None when neither exists."""
    fn = getattr(tls, "get_verified_chain", None) or getattr(getattr(tls, "_sslobj", None), "get_verified_chain", None)
    if fn is None:
        return None
    return [base64.b64encode(c.public_bytes(ssl._ssl.ENCODING_DER)).decode() for c in fn()]


if sys.argv[1] == "--version":
    print(f"Python {sys.version.split()[0]} ssl ({ssl.OPENSSL_VERSION})")
    sys.exit(0)
mode, cases = sys.argv[2], json.load(open(sys.argv[3]))
for c in cases:
    if mode == "chain":  # the trust-store drift table (Compatibility/drift.py): a handshake, then the verified chain
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        for root in c["roots"]:
            ctx.load_verify_locations(root)
        try:
            with socket.create_connection(("127.0.0.1", c["port"]), timeout=5) as s:
                with ctx.wrap_socket(s, server_hostname=c["host"]) as tls:
                    chain = verified_chain(tls)
                    how = "SSLSocket.get_verified_chain()" if hasattr(tls, "get_verified_chain") else "_sslobj.get_verified_chain() (private before 3.13)"
                    r = {"result": "accept", "detail": how if chain is not None else "this Python cannot tell the verified chain",
                         "chains": [chain] if chain is not None else []}
        except (ssl.SSLError, ssl.CertificateError, OSError) as e:
            r = {"result": "refuse", "detail": str(e), "chains": []}
    elif mode != "handshake":
        r = {"result": "n/a", "detail": "ssl has no path-validation API; judged by handshake"}
    elif c["purpose"] == "client":
        r = {"result": "n/a", "detail": "client certificates are judged by path validation"}
    elif not c.get("port"):
        r = {"result": "n/a", "detail": "no server for this case"}
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        for root in c["roots"]:
            ctx.load_verify_locations(root)
        try:
            with socket.create_connection(("127.0.0.1", c["port"]), timeout=5) as s:
                with ctx.wrap_socket(s, server_hostname=c["host"]):
                    r = {"result": "accept", "detail": "handshake completed"}
        except (ssl.SSLError, ssl.CertificateError, OSError) as e:
            r = {"result": "refuse", "detail": str(e)}
    print(json.dumps({"id": c["id"], **r}), flush=True)
