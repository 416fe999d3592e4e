"""Per-host leaf minting the way mitmproxy does it (mitmproxy/certs.py: one cached key, a CertificateBuilder per
host signed by the CA), with Python's `cryptography`, P-256 like pinlab's proxy-root. Prints one line per run:
milliseconds for one mint (build + sign + DER).
Usage: python3 mint_cryptography.py RUNS"""
import datetime
import sys
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

runs = int(sys.argv[1])
ca_key = ec.generate_private_key(ec.SECP256R1())
ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Interception Proxy CA")])
leaf_key = ec.generate_private_key(ec.SECP256R1())  # generated once, like mitmproxy's cached key
leaf_public = leaf_key.public_key()
ski = x509.SubjectKeyIdentifier.from_public_key(leaf_public)
aki = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())


def mint(host):
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder()
         .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host),
                                  x509.NameAttribute(NameOID.ORGANIZATION_NAME, "mitmproxy-style")]))
         .issuer_name(ca_name)
         .public_key(leaf_public)
         .serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(hours=1))
         .not_valid_after(now + datetime.timedelta(days=30))
         .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
         .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
         .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
         .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
         .add_extension(ski, critical=False)
         .add_extension(aki, critical=False))
    return b.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.DER)


for i in range(20):
    mint(f"warm{i}.pinning.test")
for i in range(runs):
    t = time.perf_counter()
    mint(f"h{i}.pinning.test")
    print(f"{(time.perf_counter() - t) * 1000:.4f}")
