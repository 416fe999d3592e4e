// Handshake cost with and without an OCSP staple, on one stapling server: Node's tls client asks for the staple
// (status_request, requestOCSP: true) or not, alternating rounds of N sequential full handshakes (TLS 1.3 and 1.2),
// each verified against the trust file. Usage: node bench.js MANIFEST.json SCENARIO ROUNDS N
const tls = require('tls');
const fs = require('fs');
const [manifestPath, scenario, rounds = '5', n = '200'] = process.argv.slice(2);
const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));

function once(server, ca, requestOCSP, version) {
  return new Promise((resolve, reject) => {
    let stapled = false;
    const s = tls.connect({ host: '127.0.0.1', port: server.port, servername: 'localhost', ca, requestOCSP,
                            minVersion: version, maxVersion: version, session: undefined });
    s.on('OCSPResponse', (r) => { stapled = r && r.length > 0; });
    s.on('secureConnect', () => { s.destroy(); resolve(stapled); });
    s.on('error', reject);
  });
}

async function round(server, ca, requestOCSP, version, count) {
  const t0 = process.hrtime.bigint();
  let stapled = 0;
  for (let i = 0; i < count; i++) if (await once(server, ca, requestOCSP, version)) stapled++;
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return { rate: count / seconds, stapled };
}

(async () => {
  const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
  for (const server of manifest.servers.filter((s) => s.id === scenario)) {
    const ca = fs.readFileSync(server.trustFile || server.trust);
    for (const version of ['TLSv1.3', 'TLSv1.2']) {
      const rates = { staple: [], none: [] };
      let stapledSeen = 0;
      await round(server, ca, true, version, 20); await round(server, ca, false, version, 20);  // warm-up
      for (let r = 0; r < Number(rounds); r++) {
        const a = await round(server, ca, true, version, Number(n));
        rates.staple.push(a.rate); stapledSeen += a.stapled;
        rates.none.push((await round(server, ca, false, version, Number(n))).rate);
      }
      const s = median(rates.staple), p = median(rates.none);
      console.log(`${server.engine}\t${version}\twith staple ${s.toFixed(0)}/s\twithout ${p.toFixed(0)}/s\tcost ${(p / s).toFixed(2)}x\tstaples received ${stapledSeen}/${Number(rounds) * Number(n)}`);
    }
  }
})().catch((e) => { console.error(e); process.exit(1); });
