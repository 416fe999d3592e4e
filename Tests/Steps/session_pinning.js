// A pinning client made with Node's tls module that keeps one TLS session across the connections of a cell.
//
// Run by pinlab as a command client whose template names the steps ({url.1}, {url.2}): the steps come from
// PINLAB_STEPS (a JSON array: host, ip, port, pins as base64 SHA-256 of the SPKI, empty where the step's pins are
// not in force) and the trust store from PINLAB_CA. Every step connects to ip:port with SNI `host`, offering the
// session the previous step left (`tls.connect({session})`), and prints one answer line: `accepted` when it sent
// its request, `refused` when it did not.
//
// Where the pin check lives is the argument:
//   check-server-identity  in the `checkServerIdentity` option, as Node's tls documentation shows pinning. Node
//                          calls it only on full handshakes: `onConnectSecure` in lib/_tls_wrap.js skips it when
//                          `this.isSessionReused()` ("Unless server has resumed our existing session"), so a
//                          session resumed from an interceptor is never checked against the pins
//   secure-connect         in the 'secureConnect' handler, before the request is written, on every connection.
//                          Node has no peer certificate on a resumed connection (`getPeerCertificate()` is empty
//                          and `getPeerX509Certificate()` undefined: the session it serialises keeps no chain), so
//                          the client keeps the certificate each session was made with beside the session and,
//                          on a resumed connection, checks its pins against that one — and fails closed without it
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const tls = require('tls');

const mode = process.argv[2] || 'secure-connect';
if (!['check-server-identity', 'secure-connect'].includes(mode)) {
  process.stderr.write(`usage: node ${process.argv[1]} check-server-identity|secure-connect\n`);
  process.exit(2);
}
const steps = JSON.parse(process.env.PINLAB_STEPS);
const ca = fs.readFileSync(process.env.PINLAB_CA);

// `x509` is a crypto.X509Certificate.
function spkiSHA256(x509) {
  const spki = x509.publicKey.export({ type: 'spki', format: 'der' });
  return crypto.createHash('sha256').update(spki).digest('base64');
}

// `saved` is { session, x509 }: a session and the certificate of the handshake that made it.
function connect(step, saved) {
  return new Promise((resolve) => {
    let next = saved;
    const pins = new Set(step.pins);
    // Fails closed: no certificate to hash is no match.
    const pinError = (x509) => {
      if (pins.size === 0) return undefined;
      if (!x509) return new Error(`step ${step.step}: no certificate to check the pins against`);
      return pins.has(spkiSHA256(x509)) ? undefined : new Error(`step ${step.step}: no pin matches`);
    };
    const options = {
      host: step.ip, port: step.port, servername: step.host, ca, session: saved && saved.session, minVersion: 'TLSv1.2',
    };
    if (mode === 'check-server-identity') {
      options.checkServerIdentity = (host, certificate) =>
        tls.checkServerIdentity(host, certificate) || pinError(certificate.raw && new crypto.X509Certificate(certificate.raw));
    }
    const socket = tls.connect(options);
    let x509;
    socket.on('session', (session) => { next = { session, x509 }; });
    socket.on('secureConnect', () => {
      x509 = socket.isSessionReused() ? saved && saved.x509 : socket.getPeerX509Certificate();
      if (mode === 'secure-connect') {
        const error = pinError(x509);
        if (error) {
          socket.destroy(new Error(`${error.message} (resumed session: ${socket.isSessionReused()})`));
          return;
        }
      }
      socket.end(`GET / HTTP/1.1\r\nHost: ${step.host}\r\nConnection: close\r\n\r\n`);
    });
    socket.on('data', () => {});
    socket.on('error', (error) => {
      process.stderr.write(`step ${step.step}: ${error.message}\n`);
      resolve({ answer: 'refused', saved: next });
    });
    socket.on('close', (hadError) => {
      if (!hadError) resolve({ answer: 'accepted', saved: next });
    });
    socket.setTimeout(5000, () => socket.destroy(new Error('timed out')));
  });
}

(async () => {
  let saved;
  for (const step of steps) {
    const result = await connect(step, saved);
    saved = result.saved;
    process.stdout.write(`${result.answer}\n`);
  }
})();
