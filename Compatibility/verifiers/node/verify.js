// Node's tls as one verifier stack of PinningLab's compatibility suite: a handshake with `ca` and `servername`,
// verification and host-name check as Node does them by default.
// Usage: node verify.js --mode handshake CASES.json   (one JSON line per case)
'use strict';
const fs = require('fs');
const tls = require('tls');

if (process.argv[2] === '--version') {
  console.log(`Node ${process.version} tls (OpenSSL ${process.versions.openssl})`);
  process.exit(0);
}
const mode = process.argv[3];
const cases = JSON.parse(fs.readFileSync(process.argv[4], 'utf8'));

function handshake(c) {
  return new Promise((resolve) => {
    if (!c.port) return resolve({ result: 'n/a', detail: 'no server for this case' });
    const ca = c.roots.map((p) => fs.readFileSync(p));
    const isIP = /^[0-9.]+$/.test(c.host);
    const socket = tls.connect({ host: '127.0.0.1', port: c.port, ca, servername: isIP ? undefined : c.host,
      checkServerIdentity: (_, cert) => tls.checkServerIdentity(c.host, cert), minVersion: 'TLSv1.2' });
    socket.setTimeout(5000, () => { socket.destroy(); resolve({ result: 'refuse', detail: 'timeout' }); });
    socket.once('secureConnect', () => { socket.end(); resolve({ result: 'accept', detail: 'handshake completed' }); });
    socket.once('error', (e) => resolve({ result: 'refuse', detail: `${e.code || ''} ${e.message}`.trim() }));
  });
}

// The "chain" mode (the trust-store drift table, Compatibility/drift.py): a handshake, then the chain Node reports,
// getPeerCertificate(true) followed by issuerCertificate until a certificate is its own issuer. Node builds that
// walk itself (the sent certificates, then the trust store by issuer name): it is what an app's pin check in
// checkServerIdentity or on 'secureConnect' sees, not necessarily the path OpenSSL verified.
function chain(c) {
  return new Promise((resolve) => {
    const ca = c.roots.map((p) => fs.readFileSync(p));
    const socket = tls.connect({ host: '127.0.0.1', port: c.port, ca, servername: c.host,
      checkServerIdentity: (_, cert) => tls.checkServerIdentity(c.host, cert), minVersion: 'TLSv1.2' });
    socket.setTimeout(5000, () => { socket.destroy(); resolve({ result: 'refuse', detail: 'timeout', chains: [] }); });
    socket.once('secureConnect', () => {
      const walk = [];
      for (let x = socket.getPeerCertificate(true); x && x.raw; x = x.issuerCertificate) {
        walk.push(x.raw.toString('base64'));
        if (x.issuerCertificate === x || walk.length > 10) break;
      }
      socket.end();
      resolve({ result: 'accept', detail: 'getPeerCertificate(true) walk', chains: [walk] });
    });
    socket.once('error', (e) => resolve({ result: 'refuse', detail: `${e.code || ''} ${e.message}`.trim(), chains: [] }));
  });
}

(async () => {
  for (const c of cases) {
    let r;
    if (mode === 'chain') r = await chain(c);
    else if (mode !== 'handshake') r = { result: 'n/a', detail: 'Node has no path-validation API; judged by handshake' };
    else if (c.purpose === 'client') r = { result: 'n/a', detail: 'client certificates are judged by path validation' };
    else r = await handshake(c);
    process.stdout.write(JSON.stringify({ id: c.id, ...r }) + '\n');
  }
})();
