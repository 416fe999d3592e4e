// A TLS server for the compatibility suite's ML-DSA rows (Compatibility/run.py): neither pinlab engine can serve an
// ML-DSA key against OpenSSL 3.0 or GnuTLS 3.7, so Node 24 (OpenSSL 3.5) presents each ML-DSA chain exactly as given,
// and every handshake stack is asked against it.
// Usage: node24 serve.js SERVERS.json   SERVERS.json: [{"id", "key": PEM path, "chain": [PEM paths, leaf first]}]
// Prints one JSON line {"servers": {id: port}} once every server listens on 127.0.0.1, then serves until SIGTERM.
'use strict';
const fs = require('fs');
const tls = require('tls');

const specs = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const servers = [];
const ports = {};
let pending = specs.length;
for (const s of specs) {
  const server = tls.createServer({
    key: fs.readFileSync(s.key),
    cert: s.chain.map((p) => fs.readFileSync(p, 'utf8')).join(''),
    minVersion: 'TLSv1.3',
  }, (socket) => socket.end());
  // A client that cannot take the chain aborts the handshake; that is the client's answer, not the server's error.
  server.on('tlsClientError', () => {});
  server.listen(0, '127.0.0.1', () => {
    ports[s.id] = server.address().port;
    if (--pending === 0) process.stdout.write(JSON.stringify({ servers: ports }) + '\n');
  });
  servers.push(server);
}
process.on('SIGTERM', () => { for (const s of servers) s.close(); process.exit(0); });
