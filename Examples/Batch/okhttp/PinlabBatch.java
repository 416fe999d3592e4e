// An OkHttp client with CertificatePinner, as a PinningLab batch harness and as a per-cell command.
//
// Build (Debian's libokhttp-java; OkHttp 3 is Java, it needs only okio):
//   javac -cp /usr/share/java/okhttp.jar:/usr/share/java/okio.jar -d build PinlabBatch.java
// Batch (one JVM for every cell; --batch-steps: a cell of several connections is made with one client, see steps()):
//   pinlab check --batch --batch-steps --profiles none,leaf-spki,leaf-spki+backup,intermediate-spki,root-spki -- \
//     java -cp build:/usr/share/java/okhttp.jar:/usr/share/java/okio.jar PinlabBatch
// Cells judged at a time: -Dpinlab.threads=N (default 8). A JVM that lives seconds spends about 30 % less CPU with
// -XX:TieredStopAtLevel=1 -XX:+UseSerialGC (what `pinlab bench batch` passes to both modes).
// Per cell (one JVM per cell; exit status 0 = accepted, 1 = refused):
//   pinlab check --profiles … -- java -cp … PinlabBatch --cell {url} {ca} --ip {ip} '[--pins {pins.okhttp}]' \
//     '[--pin-domain {pins.domain}]' '[--pin-subdomains {pins.subdomains}]' '[--p12 {client.p12}]' \
//     '[--password {client.password}]'
//
// Both modes judge a cell with the same method, judge(): a trust manager holding only the roots of the cell's trust
// file, OkHttp's host-name verifier, and a CertificatePinner with the cell's pins — which OkHttp matches against the
// chain its CertificateChainCleaner builds to a trusted root, not the chain the server sent. OkHttp pins SPKI hashes
// only, so the harness declares no leaf-cert support (run it with --profiles as above).
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.security.KeyStore;
import java.security.cert.*;
import java.util.*;
import java.util.concurrent.*;
import javax.net.ssl.*;
import okhttp3.*;

public final class PinlabBatch {
    static final OkHttpClient BASE = new OkHttpClient.Builder().retryOnConnectionFailure(false).build();

    /** Connects, validates, pins; sends GET / only when all is right. Returns {claim, category, detail}. */
    static String[] judge(String url, String ip, String trustFile, List<String> pins, String domain, boolean subdomains,
                          String p12, String password, double timeout) {
        try {
            Tls tls = TLS.computeIfAbsent(trustFile + "|" + p12, k -> tls(trustFile, p12, password));
            return judge(BASE, tls, url, ip, pins, domain, subdomains, timeout);
        } catch (Exception e) {
            return new String[] {"refused", "other", e.toString()};
        }
    }

    /** One request with `base`'s connection pool and `tls`'s session cache, and the pins held now. */
    static String[] judge(OkHttpClient base, Tls tls, String url, String ip, List<String> pins, String domain,
                          boolean subdomains, double timeout) {
        HttpUrl target = HttpUrl.parse(url);
        if (target == null) return new String[] {"refused", "other", "not a URL: " + url};
        // The cell's host name (localhost, api.pinning.test, …) is reached at the cell's address, as an app's test
        // would map it; the name still decides SNI, the host-name check and the pins.
        Dns dns = host -> List.of(java.net.InetAddress.getByName(ip == null ? "127.0.0.1" : ip));
        return judge(client(base, tls.context.getSocketFactory(), tls.trust, dns, pinner(target, pins, domain, subdomains), timeout), target);
    }

    /** The certificate pinner of a pin set: `pins` declared for `domain` (the cell's host unless the scenario scopes
     *  them elsewhere), and for its subdomains when `subdomains` — OkHttp 3's pattern for those is `*.domain` (one
     *  level; `**.` is OkHttp 4). */
    static CertificatePinner pinner(HttpUrl target, List<String> pins, String domain, boolean subdomains) {
        CertificatePinner.Builder pinner = new CertificatePinner.Builder();
        String scope = domain == null || domain.isEmpty() ? target.host() : domain;
        for (String p : pins) {
            pinner.add(scope, p);
            if (subdomains) pinner.add("*." + scope, p);
        }
        return pinner.build();
    }

    static OkHttpClient client(OkHttpClient base, SSLSocketFactory factory, X509TrustManager trust, Dns dns,
                               CertificatePinner pinner, double timeout) {
        long ms = (long) (timeout * 1000);
        return base.newBuilder().sslSocketFactory(factory, trust).certificatePinner(pinner).dns(dns)
            .connectTimeout(ms, TimeUnit.MILLISECONDS).readTimeout(ms, TimeUnit.MILLISECONDS).build();
    }

    /** Sends GET / with `client`. Returns {claim, category, detail}. */
    static String[] judge(OkHttpClient client, HttpUrl target) {
        try {
            try (Response r = client.newCall(new Request.Builder().url(target).build()).execute()) {
                return new String[] {"accepted", null, "HTTP " + r.code()};
            }
        } catch (SSLPeerUnverifiedException e) {
            String m = String.valueOf(e.getMessage());
            return new String[] {"refused", m.contains("pinning") ? "pin-mismatch" : "hostname", m};
        } catch (SSLHandshakeException e) {
            String m = String.valueOf(e.getMessage());
            return new String[] {"refused", m.contains("path") || m.contains("certificate") ? "chain-invalid" : "protocol", m};
        } catch (java.net.SocketTimeoutException e) {
            return new String[] {"refused", "timeout", String.valueOf(e.getMessage())};
        } catch (Exception e) {
            return new String[] {"refused", "other", e.toString()};
        }
    }

    /** A trust manager holding only the roots of a trust file, and the client identity of a PKCS#12 file. */
    record Tls(SSLContext context, X509TrustManager trust) {}

    /** One per trust file and client identity: the cells of a batch share them (building one takes milliseconds). */
    static final ConcurrentHashMap<String, Tls> TLS = new ConcurrentHashMap<>();

    static Tls tls(String trustFile, String p12, String password) {
        try {
            KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
            trust.load(null, null);
            try (InputStream in = new FileInputStream(trustFile)) {
                int i = 0;
                for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) trust.setCertificateEntry("root" + i++, c);
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trust);
            X509TrustManager tm = (X509TrustManager) tmf.getTrustManagers()[0];
            KeyManager[] kms = null;
            if (p12 != null) {
                KeyStore id = KeyStore.getInstance("PKCS12");
                try (InputStream in = new FileInputStream(p12)) { id.load(in, password.toCharArray()); }
                KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                kmf.init(id, password.toCharArray());
                kms = kmf.getKeyManagers();
            }
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(kms, new TrustManager[] {tm}, null);
            return new Tls(context, tm);
        } catch (Exception e) {
            throw new IllegalStateException("cannot load " + trustFile + (p12 == null ? "" : " or " + p12) + ": " + e, e);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--cell")) {
            Map<String, String> o = new HashMap<>();
            for (int i = 3; i + 1 < args.length; i += 2) o.put(args[i], args[i + 1]);
            List<String> pins = o.containsKey("--pins") ? Arrays.asList(o.get("--pins").split(",")) : List.of();
            String[] r = judge(args[1], o.get("--ip"), args[2], pins, o.get("--pin-domain"), "true".equals(o.get("--pin-subdomains")),
                o.get("--p12"), o.get("--password"), 10);
            System.err.println(r[0] + " (" + r[1] + "): " + r[2]);
            System.exit(r[0].equals("accepted") ? 0 : 1);
        }
        String path = System.getenv("PINLAB_BATCH");
        String text = path != null ? Files.readString(Path.of(path)) : new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
        Map<?, ?> doc = (Map<?, ?>) new Json(text).value();
        double timeout = ((Number) doc.get("cellTimeoutSeconds")).doubleValue();
        ExecutorService pool = Executors.newFixedThreadPool(Integer.getInteger("pinlab.threads", 8));
        List<Future<?>> all = new ArrayList<>();
        for (Object o : (List<?>) doc.get("cells")) {
            Map<?, ?> cell = (Map<?, ?>) o;
            if (cell.get("steps") != null) {
                all.add(pool.submit(() -> steps(cell, timeout)));
                continue;
            }
            all.add(pool.submit(() -> {
                Map<?, ?> pins = (Map<?, ?>) cell.get("pins");
                Map<?, ?> id = (Map<?, ?>) cell.get("clientIdentity");
                List<String> okhttp = new ArrayList<>();
                for (Object p : (List<?>) pins.get("okhttp")) okhttp.add((String) p);
                long t0 = System.nanoTime();
                String[] r = judge((String) cell.get("url"), (String) cell.get("ip"), (String) cell.get("trustFile"), okhttp,
                    (String) pins.get("domain"), Boolean.TRUE.equals(pins.get("includeSubdomains")),
                    id == null ? null : (String) id.get("pkcs12File"), id == null ? null : (String) id.get("pkcs12Password"), timeout);
                StringBuilder line = new StringBuilder("{\"id\":").append(Json.quote((String) cell.get("id")))
                    .append(",\"claim\":\"").append(r[0]).append("\",\"detail\":").append(Json.quote(r[2]))
                    .append(",\"milliseconds\":").append((System.nanoTime() - t0) / 1e6);
                if (r[1] != null) line.append(",\"category\":\"").append(r[1]).append('"');
                synchronized (System.out) { System.out.println(line.append('}')); System.out.flush(); }
            }));
        }
        for (Future<?> f : all) f.get();
        pool.shutdown();
        BASE.dispatcher().executorService().shutdown();
        BASE.connectionPool().evictAll();
    }

    /**
     * A cell of several connections (`pinlab check --batch --batch-steps`), made as one app makes them: one
     * SSLContext (one TLS session cache), one socket factory, one DNS (each step's host at its address), one
     * connection pool, and one certificate pinner per pin set the app holds (none before it has its pins). Every step's
     * client is built from those same objects, so OkHttp sees one Address per host and pin set, as in an app with one
     * OkHttpClient: it reuses a pooled connection when the Address is equal, and may coalesce an HTTP/2 connection
     * for another host of the same IP whose certificate covers it — only when that host's pins accept the
     * connection's chain (RealConnection.isEligible, square/okhttp #3207). A harness that built these per step made
     * every Address different, and OkHttp's reuse and coalescing never ran.
     */
    static void steps(Map<?, ?> cell, double timeout) {
        Map<?, ?> id = (Map<?, ?>) cell.get("clientIdentity");
        Tls tls;
        try {
            tls = tls((String) cell.get("trustFile"), id == null ? null : (String) id.get("pkcs12File"),
                id == null ? null : (String) id.get("pkcs12Password"));
        } catch (Exception e) {
            tls = null;
        }
        OkHttpClient base = BASE.newBuilder().connectionPool(new ConnectionPool()).build();
        SSLSocketFactory factory = tls == null ? null : tls.context.getSocketFactory();
        Map<String, String> addresses = new ConcurrentHashMap<>();
        Dns dns = host -> List.of(java.net.InetAddress.getByName(addresses.getOrDefault(host, "127.0.0.1")));
        Map<String, CertificatePinner> pinners = new HashMap<>();
        for (Object o : (List<?>) cell.get("steps")) {
            Map<?, ?> step = (Map<?, ?>) o;
            Map<?, ?> pins = (Map<?, ?>) step.get("pins");
            List<String> okhttp = new ArrayList<>();
            for (Object p : (List<?>) pins.get("okhttp")) okhttp.add((String) p);
            long t0 = System.nanoTime();
            HttpUrl target = HttpUrl.parse((String) step.get("url"));
            String[] r;
            if (tls == null) {
                r = new String[] {"refused", "other", "cannot load the trust file"};
            } else if (target == null) {
                r = new String[] {"refused", "other", "not a URL: " + step.get("url")};
            } else {
                String ip = (String) step.get("ip");
                addresses.put(target.host(), ip == null ? "127.0.0.1" : ip);
                String domain = (String) pins.get("domain");
                boolean subdomains = Boolean.TRUE.equals(pins.get("includeSubdomains"));
                CertificatePinner pinner = pinners.computeIfAbsent(okhttp + "|" + domain + "|" + subdomains + "|" + target.host(),
                    k -> pinner(target, okhttp, domain, subdomains));
                r = judge(client(base, factory, tls.trust, dns, pinner, timeout), target);
            }
            StringBuilder line = new StringBuilder("{\"id\":").append(Json.quote((String) cell.get("id")))
                .append(",\"step\":").append(((Number) step.get("step")).intValue())
                .append(",\"claim\":\"").append(r[0]).append("\",\"detail\":").append(Json.quote(r[2]))
                .append(",\"milliseconds\":").append((System.nanoTime() - t0) / 1e6);
            if (r[1] != null) line.append(",\"category\":\"").append(r[1]).append('"');
            synchronized (System.out) { System.out.println(line.append('}')); System.out.flush(); }
        }
        base.connectionPool().evictAll();
    }

    /** Just enough JSON for the batch document: objects, arrays, strings, numbers, true/false/null. */
    static final class Json {
        private final String s;
        private int i;
        Json(String s) { this.s = s; }
        Object value() {
            ws();
            char c = s.charAt(i);
            if (c == '{') {
                Map<String, Object> m = new LinkedHashMap<>();
                i++; ws();
                if (s.charAt(i) == '}') { i++; return m; }
                while (true) {
                    ws(); String k = string(); ws(); expect(':'); m.put(k, value()); ws();
                    if (s.charAt(i++) == '}') return m;
                }
            }
            if (c == '[') {
                List<Object> l = new ArrayList<>();
                i++; ws();
                if (s.charAt(i) == ']') { i++; return l; }
                while (true) {
                    l.add(value()); ws();
                    if (s.charAt(i++) == ']') return l;
                }
            }
            if (c == '"') return string();
            if (s.startsWith("true", i)) { i += 4; return true; }
            if (s.startsWith("false", i)) { i += 5; return false; }
            if (s.startsWith("null", i)) { i += 4; return null; }
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
            return Double.parseDouble(s.substring(start, i));
        }
        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') return b.toString();
                if (c != '\\') { b.append(c); continue; }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': b.append('\n'); break;
                    case 't': b.append('\t'); break;
                    case 'r': b.append('\r'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                    default: b.append(e);
                }
            }
        }
        private void ws() { while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++; }
        private void expect(char c) {
            if (s.charAt(i) != c) throw new IllegalArgumentException("JSON: expected '" + c + "' at offset " + i);
            i++;
        }
        static String quote(String v) {
            if (v == null) return "\"\"";
            StringBuilder b = new StringBuilder("\"");
            for (char c : v.toCharArray()) {
                if (c == '"' || c == '\\') b.append('\\').append(c);
                else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                else b.append(c);
            }
            return b.append('"').toString();
        }
    }
}
