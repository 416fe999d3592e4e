// An HTTP/2 client made with Node's http2 module that keeps its sessions open across the connections of a cell and
// sends a later request on one of them when its certificate covers the request's host: connection coalescing
// (RFC 9113 section 9.1.1), as browsers and OkHttp do.
//
// Run by pinlab as a command client whose template names the steps ({url.1}, {url.2}): the steps come from
// PINLAB_STEPS (host, ip, port, pins as base64 SHA-256 of the SPKI), the trust store from PINLAB_CA, the pin scope
// from PINLAB_PINS_DOMAIN and PINLAB_PINS_SUBDOMAINS (pins apply to hosts in scope only). Each step prints one answer
// line: `accepted` when its request got a response, `refused` when it was not sent.
//
// Where the pin check lives is the argument:
//   checks-pins     a host's pins are checked on every new connection (in checkServerIdentity) and, before a
//                   session opened for another host is reused, against that session's certificate: the reuse is
//                   refused and a connection of its own is made (what OkHttp does since square/okhttp #3207)
//   reuses-blindly  pins are checked on new connections only; an open session whose certificate covers the host is
//                   reused as it is, so the request goes to whoever holds that session
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const http2 = require('http2');
const tls = require('tls');

const mode = process.argv[2] || 'checks-pins';
if (!['checks-pins', 'reuses-blindly'].includes(mode)) {
  process.stderr.write(`usage: node ${process.argv[1]} checks-pins|reuses-blindly\n`);
  process.exit(2);
}
const steps = JSON.parse(process.env.PINLAB_STEPS);
const ca = fs.readFileSync(process.env.PINLAB_CA);
const domain = (process.env.PINLAB_PINS_DOMAIN || '').toLowerCase();
const subdomains = process.env.PINLAB_PINS_SUBDOMAINS === 'true';

function inScope(host) {
  const h = host.toLowerCase();
  return domain === '' || h === domain || (subdomains && h.endsWith('.' + domain));
}

// The pins of `step` against a certificate (a crypto.X509Certificate); fails closed without one.
function pinError(step, x509) {
  const pins = new Set(step.pins);
  if (pins.size === 0 || !inScope(step.host)) return undefined;
  if (!x509) return new Error(`step ${step.step}: no certificate to check the pins of ${step.host} against`);
  const spki = x509.publicKey.export({ type: 'spki', format: 'der' });
  const hash = crypto.createHash('sha256').update(spki).digest('base64');
  return pins.has(hash) ? undefined : new Error(`step ${step.step}: no pin of ${step.host} matches`);
}

// Open sessions: { address: 'ip:port', session }.
const sessions = [];

function open(step) {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`https://${step.host}:${step.port}`, {
      createConnection: () => tls.connect({
        host: step.ip, port: step.port, servername: step.host, ca, minVersion: 'TLSv1.2', ALPNProtocols: ['h2'],
        checkServerIdentity: (host, certificate) => tls.checkServerIdentity(host, certificate)
          || pinError(step, certificate.raw && new crypto.X509Certificate(certificate.raw)),
      }),
    });
    session.once('connect', () => resolve(session));
    session.once('error', reject);
    session.on('error', () => {});
    session.setTimeout(5000, () => session.destroy(new Error('timed out')));
  });
}

// A session of the same address whose certificate covers the step's host (and, in checks-pins, whose certificate
// the step's pins accept).
function reusable(step) {
  for (const s of sessions) {
    if (s.address !== `${step.ip}:${step.port}` || s.session.destroyed || s.session.closed) continue;
    const certificate = s.session.socket.getPeerCertificate();
    if (tls.checkServerIdentity(step.host, certificate) !== undefined) continue;
    if (mode === 'checks-pins' && pinError(step, s.session.socket.getPeerX509Certificate()) !== undefined) continue;
    return s.session;
  }
  return undefined;
}

function request(session, step) {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':path': '/', ':authority': `${step.host}:${step.port}` });
    req.on('response', () => {});
    req.on('data', () => {});
    req.on('end', () => resolve());
    req.on('error', reject);
    req.setTimeout(5000, () => req.close(http2.constants.NGHTTP2_CANCEL));
    req.end();
  });
}

(async () => {
  for (const step of steps) {
    try {
      let session = reusable(step);
      if (!session) {
        session = await open(step);
        sessions.push({ address: `${step.ip}:${step.port}`, session });
      }
      await request(session, step);
      process.stdout.write('accepted\n');
    } catch (error) {
      process.stderr.write(`step ${step.step}: ${error.message}\n`);
      process.stdout.write('refused\n');
    }
  }
  for (const s of sessions) s.session.close();
})();
