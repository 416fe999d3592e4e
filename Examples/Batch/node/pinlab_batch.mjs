#!/usr/bin/env node
// A pinning HTTPS client in Node's `tls`, as a PinningLab batch harness (no dependencies; Node 18 or later).
//
//   pinlab check --batch -- node Examples/Batch/node/pinlab_batch.mjs
//
// It reads the batch document on standard input (or from the file named by $PINLAB_BATCH) and prints one JSON answer
// per cell on standard output: {"id": …, "claim": "accepted"|"refused", "category": …, "detail": …, "milliseconds": …}.
//
// A cell is judged as a Node app that pins does it: `tls.connect` with `ca` holding only the roots of the cell's trust
// file (it replaces Node's bundled roots), `servername` the cell's host (the SNI and the name the certificate is
// checked against; a trailing dot is part of neither) and a `checkServerIdentity` that first does Node's own host-name
// check (`tls.checkServerIdentity`), then matches the pins against the peer certificate chain Node hands it (the
// leaf, then `issuerCertificate` up to the root: the chain OpenSSL verified, completed from the trust store). A pin is
// the base64 SHA-256 of a certificate's SubjectPublicKeyInfo DER (`X509Certificate.publicKey`, exported as SPKI), or
// of the whole certificate DER for pins of kind certificate-sha256 (leaf-cert). Node calls `checkServerIdentity` only
// once the chain verified; an error it returns ends the connection before anything is sent. Pins apply only when the
// host is in their scope (pins.domain, and its subdomains when pins.includeSubdomains). Only then is GET / sent.
// Cells of several connections (`--batch-steps`) are not made: run it without that flag.
import crypto from "node:crypto";
import fs from "node:fs";
import tls from "node:tls";

/** Whether pins declared for `domain` (and its subdomains when `subdomains`) apply to `host`. */
function inScope(host, domain, subdomains) {
  if (!domain) return true;
  host = host.toLowerCase().replace(/\.$/, "");
  domain = domain.toLowerCase().replace(/\.$/, "");
  return host === domain || (subdomains && host.endsWith("." + domain));
}

const sha256 = (data) => crypto.createHash("sha256").update(data).digest("base64");

/** The peer chain as `checkServerIdentity` gets it: the leaf, then each issuer, once each. */
function chainOf(cert) {
  const chain = [];
  const seen = new Set();
  for (let c = cert; c && c.raw && !seen.has(c); c = c.issuerCertificate) {
    seen.add(c);
    chain.push(c.raw);
  }
  return chain;
}

/** Why a connection was refused, in the batch protocol's words. */
function category(err) {
  const code = String(err.code || "");
  const text = String(err.message || err);
  if (code === "ERR_PINLAB_PIN_MISMATCH") return "pin-mismatch";
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") return "hostname";
  if (code === "ETIMEDOUT" || code === "ERR_PINLAB_TIMEOUT") return "timeout";
  // OpenSSL's verify errors (X509_V_ERR_*, without the prefix); UNSPECIFIED is the one OpenSSL 3 gives for a signer
  // without keyCertSign and for a signature digest too weak.
  if (/CERT|ISSUER|SIGNATURE|CHAIN|PATH_LENGTH|INVALID_CA|INVALID_PURPOSE|CRL|^UNSPECIFIED$/.test(code)) return "chain-invalid";
  if (/certificate required/i.test(text)) return "client-auth";
  if (code.startsWith("ERR_SSL") || code === "ECONNRESET" || /SSL|TLS|alert/i.test(text)) return "protocol";
  return "other";
}

/** Connects to the cell's server, validates, pins, and sends GET / only when all is right: [claim, category, detail]. */
function judge(cell, timeoutMs) {
  return new Promise((resolve) => {
    let done = false;
    const finish = (claim, cat, detail) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket?.destroy();
      resolve([claim, cat, detail]);
    };
    const host = cell.host.replace(/\.$/, "");
    const pins = new Set(inScope(cell.host, cell.pins.domain, cell.pins.includeSubdomains) ? cell.pins.base64 : []);
    const certificatePins = cell.pins.kind === "certificate-sha256";
    let socket;
    const timer = setTimeout(() => finish("refused", "timeout", `no answer within ${timeoutMs} ms`), timeoutMs);
    try {
      const options = {
        host: cell.ip || "127.0.0.1",
        port: cell.port,
        servername: host,
        ca: fs.readFileSync(cell.trustFile),
        minVersion: "TLSv1.2",
        checkServerIdentity(name, cert) {
          const wrongHost = tls.checkServerIdentity(name, cert);
          if (wrongHost) return wrongHost;
          if (pins.size === 0) return undefined;
          for (const der of chainOf(cert)) {
            const pinned = certificatePins
              ? der
              : new crypto.X509Certificate(der).publicKey.export({ type: "spki", format: "der" });
            if (pins.has(sha256(pinned))) return undefined;
          }
          const e = new Error(`no pin matches the peer certificate chain of ${name}`);
          e.code = "ERR_PINLAB_PIN_MISMATCH";
          return e;
        },
      };
      const id = cell.clientIdentity;
      if (id && id.certificateFile && id.keyFile) {
        options.cert = fs.readFileSync(id.certificateFile);
        options.key = fs.readFileSync(id.keyFile);
      }
      socket = tls.connect(options);
    } catch (e) {
      finish("refused", "other", String(e.message || e));
      return;
    }
    let response = "";
    socket.setEncoding("latin1");
    socket.on("secureConnect", () => {
      socket.write(`GET / HTTP/1.1\r\nHost: ${cell.host}\r\nConnection: close\r\n\r\n`);
    });
    socket.on("data", (chunk) => {
      response += chunk;
    });
    socket.on("error", (e) => finish("refused", category(e), `${e.code ? e.code + ": " : ""}${e.message}`));
    socket.on("close", () => {
      const status = response.split("\r\n", 1)[0];
      if (status.startsWith("HTTP/")) finish("accepted", null, status);
      else finish("refused", "other", `no HTTP response (${JSON.stringify(status)})`);
    });
  });
}

async function main() {
  const path = process.env.PINLAB_BATCH;
  const text = path ? fs.readFileSync(path, "utf8") : fs.readFileSync(0, "utf8");
  const doc = JSON.parse(text);
  const timeoutMs = (doc.cellTimeoutSeconds || 10) * 1000;
  const cells = doc.cells.slice();
  // Eight cells at a time; each answer is one whole line.
  const worker = async () => {
    for (let cell = cells.shift(); cell; cell = cells.shift()) {
      if (cell.steps) {
        process.stderr.write(
          `pinlab_batch.mjs: ${cell.id} is several connections; this harness makes one per cell (run it without --batch-steps)\n`,
        );
        continue;
      }
      const start = performance.now();
      const [claim, cat, detail] = await judge(cell, timeoutMs);
      const answer = { id: cell.id, claim, detail, milliseconds: performance.now() - start };
      if (cat) answer.category = cat;
      process.stdout.write(JSON.stringify(answer) + "\n");
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

main().catch((e) => {
  process.stderr.write(`pinlab_batch.mjs: ${e.stack || e}\n`);
  process.exitCode = 2;
});
