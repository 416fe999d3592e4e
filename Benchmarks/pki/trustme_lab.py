"""Build the same tree of P-256 certificates as the lab PKI with trustme, in process.

Usage: python3 trustme_lab.py SHAPE.json OUTDIR REPEATS
SHAPE.json is written by `pinlab bench pki`: a list of {name, role, issuer, hosts} with issuers first.
Prints one line per repeat: the in-process wall and CPU milliseconds (certificates and keys built and written as PEM).
"""
import json
import os
import sys
import time

import trustme


def build(shape, outdir):
    cas = {}
    for e in shape:
        name, role, issuer = e["name"], e["role"], e["issuer"]
        if role == "root" or issuer == name:
            if role in ("root", "intermediate"):
                ca = trustme.CA(key_type=trustme.KeyType.ECDSA)
                cas[name] = ca
                ca.cert_pem.write_to_path(os.path.join(outdir, name + ".pem"))
                ca.private_key_pem.write_to_path(os.path.join(outdir, name + ".key"))
                continue
            # A self-signed leaf: trustme has none; issue from a throwaway CA (same work: one key, one signature).
            parent = trustme.CA(key_type=trustme.KeyType.ECDSA)
        else:
            parent = cas.get(issuer)
            if parent is None:  # a leaf signed by a leaf: trustme cannot; use the leaf's own issuer chain root
                parent = next(iter(cas.values()))
        if role in ("root", "intermediate"):
            ca = parent.create_child_ca(key_type=trustme.KeyType.ECDSA)
            cas[name] = ca
            ca.cert_pem.write_to_path(os.path.join(outdir, name + ".pem"))
            ca.private_key_pem.write_to_path(os.path.join(outdir, name + ".key"))
        else:
            hosts = e["hosts"] or [name + ".client.test"]
            cert = parent.issue_cert(*hosts, key_type=trustme.KeyType.ECDSA)
            cert.private_key_and_cert_chain_pem.write_to_path(os.path.join(outdir, name + ".pem"))


def main():
    shape = json.load(open(sys.argv[1]))
    outdir = sys.argv[2]
    repeats = int(sys.argv[3])
    for i in range(repeats):
        d = os.path.join(outdir, str(i))
        os.makedirs(d, exist_ok=True)
        t = time.perf_counter()
        c = time.process_time()
        build(shape, d)
        print("%.3f %.3f" % ((time.perf_counter() - t) * 1000.0, (time.process_time() - c) * 1000.0))


if __name__ == "__main__":
    main()
