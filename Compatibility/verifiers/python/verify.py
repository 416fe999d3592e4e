"""Python's ssl as one verifier stack of PinningLab's compatibility suite: a handshake with a default client context
(PROTOCOL_TLS_CLIENT: verification and host-name check on), the case's roots only.
Usage: python3 verify.py --mode handshake CASES.json   (one JSON line per case)"""
import json, socket, ssl, sys

if sys.argv[1] == "--version":
    print(f"Python {sys.version.split()[0]} ssl ({ssl.OPENSSL_VERSION})")
    sys.exit(0)
mode, cases = sys.argv[2], json.load(open(sys.argv[3]))
for c in cases:
    if mode != "handshake":
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
