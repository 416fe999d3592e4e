// The JDK as one verifier stack of PinningLab's compatibility suite: PKIX CertPathValidator (with the trust anchor
// built as JSSE's default trust manager builds it: TrustAnchor(cert, null)) and a JSSE handshake with endpoint
// identification. Usage: java Verify.java --mode path|handshake CASES.json   (one JSON line per case)
// The trust-store drift table (Compatibility/drift.py) adds --mode builder (CertPathBuilder) and --mode trustmanager
// (the validator JSSE's trust manager runs), which also print the verified chain ("chains": [[base64 DER…]]).
import java.io.*;
import java.net.*;
import java.nio.file.*;
import java.security.*;
import java.security.cert.*;
import java.util.*;
import java.util.regex.*;
import javax.net.ssl.*;

public class Verify {
    record Case(String id, List<String> chain, List<String> roots, String host, String purpose, int port) {}

    static List<X509Certificate> certs(List<String> paths) throws Exception {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        List<X509Certificate> out = new ArrayList<>();
        for (String p : paths) {
            try (InputStream in = new FileInputStream(p)) {
                for (java.security.cert.Certificate c : cf.generateCertificates(in)) out.add((X509Certificate) c);
            }
        }
        return out;
    }

    static String path(Case c) {
        try {
            List<X509Certificate> chain = certs(c.chain());
            Set<TrustAnchor> anchors = new HashSet<>();
            for (X509Certificate r : certs(c.roots())) anchors.add(new TrustAnchor(r, null));
            PKIXParameters params = new PKIXParameters(anchors);
            params.setRevocationEnabled(false);
            CertificateFactory cf = CertificateFactory.getInstance("X.509");
            PKIXCertPathValidatorResult result =
                (PKIXCertPathValidatorResult) CertPathValidator.getInstance("PKIX").validate(cf.generateCertPath(chain), params);
            // PKIX checks neither the host name nor the extended key usage: JSSE does, as the trust manager does.
            List<String> eku = chain.get(0).getExtendedKeyUsage();
            String want = "client".equals(c.purpose()) ? "1.3.6.1.5.5.7.3.2" : "1.3.6.1.5.5.7.3.1";
            if (eku != null && !eku.contains(want)) return "refuse\tthe extended key usage does not allow " + c.purpose() + " authentication";
            if (!"client".equals(c.purpose()) && !hostMatches(chain.get(0), c.host())) return "refuse\tthe host name " + c.host() + " is not in the certificate";
            // The anchor that ends the path (what a root pin is compared with): the path is validated as sent.
            return "accept\tvalidated; path ends at " + result.getTrustAnchor().getTrustedCert().getSubjectX500Principal().getName();
        } catch (Exception e) {
            return "refuse\t" + e;
        }
    }

    /** The "builder" mode: PKIX CertPathBuilder from the leaf, the sent certificates in a CertStore; prints the built
     *  path and its trust anchor, base64 DER, leaf first (the trust-store drift table, Compatibility/drift.py). */
    static String built(Case c) {
        try {
            List<X509Certificate> chain = certs(c.chain());
            Set<TrustAnchor> anchors = new HashSet<>();
            for (X509Certificate r : certs(c.roots())) anchors.add(new TrustAnchor(r, null));
            X509CertSelector target = new X509CertSelector();
            target.setCertificate(chain.get(0));
            PKIXBuilderParameters params = new PKIXBuilderParameters(anchors, target);
            params.setRevocationEnabled(false);
            params.addCertStore(CertStore.getInstance("Collection", new CollectionCertStoreParameters(chain)));
            PKIXCertPathBuilderResult r = (PKIXCertPathBuilderResult) CertPathBuilder.getInstance("PKIX").build(params);
            List<X509Certificate> path = new ArrayList<>();
            for (java.security.cert.Certificate x : r.getCertPath().getCertificates()) path.add((X509Certificate) x);
            path.add(r.getTrustAnchor().getTrustedCert());
            return "accept\tbuilt; anchor " + r.getTrustAnchor().getTrustedCert().getSubjectX500Principal().getName() + "\t" + der(path);
        } catch (Exception e) {
            return "refuse\t" + e + "\t";
        }
    }

    /** The "trustmanager" mode: the chain JSSE's default X509TrustManager validates, as sent, for a TLS server —
     *  sun.security.validator.Validator (PKIX, "tls server"), which X509TrustManagerImpl calls and which returns the
     *  validated chain ending at the anchor. Reached by reflection; needs --add-exports
     *  java.base/sun.security.validator=ALL-UNNAMED. The host name is checked as the trust manager's endpoint check does. */
    static String trustManager(Case c) {
        try {
            List<X509Certificate> chain = certs(c.chain());
            List<X509Certificate> roots = certs(c.roots());
            Class<?> v = Class.forName("sun.security.validator.Validator");
            Object validator = v.getMethod("getInstance", String.class, String.class, Collection.class)
                .invoke(null, "PKIX", "tls server", roots);
            X509Certificate[] out;
            try {
                // authType "UNKNOWN": what the trust manager passes on a TLS 1.3 connection.
                out = (X509Certificate[]) v.getMethod("validate", X509Certificate[].class, Collection.class, Object.class)
                    .invoke(validator, chain.toArray(new X509Certificate[0]), List.of(), "UNKNOWN");
            } catch (java.lang.reflect.InvocationTargetException e) {
                return "refuse\t" + e.getCause() + "\t";
            }
            if (!hostMatches(chain.get(0), c.host())) return "refuse\tthe host name " + c.host() + " is not in the certificate\t";
            return "accept\tvalidated by the trust manager's validator\t" + der(Arrays.asList(out));
        } catch (Exception e) {
            return "error\t" + e + "\t";
        }
    }

    static String der(List<X509Certificate> path) throws Exception {
        StringBuilder b = new StringBuilder();
        for (X509Certificate x : path) {
            if (b.length() > 0) b.append(' ');
            b.append(Base64.getEncoder().encodeToString(x.getEncoded()));
        }
        return b.toString();
    }

    static boolean hostMatches(X509Certificate cert, String host) throws Exception {
        Collection<List<?>> sans = cert.getSubjectAlternativeNames();
        if (sans == null) return false;
        for (List<?> san : sans) {
            int type = (Integer) san.get(0);
            String v = (String) san.get(1);
            if ((type == 2 || type == 7) && v.equalsIgnoreCase(host)) return true;
        }
        return false;
    }

    static String handshake(Case c) {
        if (c.port() == 0) return "n/a\tno server for this case";
        try {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(null, null);
            int i = 0;
            for (X509Certificate r : certs(c.roots())) ks.setCertificateEntry("root" + i++, r);
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(ks);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(null, tmf.getTrustManagers(), null);
            try (Socket plain = new Socket()) {
                plain.connect(new InetSocketAddress("127.0.0.1", c.port()), 5000);
                plain.setSoTimeout(5000);
                SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(plain, c.host(), c.port(), true);
                SSLParameters p = s.getSSLParameters();
                p.setEndpointIdentificationAlgorithm("HTTPS");
                if (!c.host().matches("[0-9.]+")) p.setServerNames(List.of(new SNIHostName(c.host())));
                s.setSSLParameters(p);
                s.startHandshake();
                s.close();
            }
            return "accept\thandshake completed";
        } catch (Exception e) {
            Throwable t = e;
            while (t.getCause() != null) t = t.getCause();
            return "refuse\t" + t;
        }
    }

    static String str(String json, String key) {
        Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"").matcher(json);
        return m.find() ? m.group(1).replace("\\\\", "\\").replace("\\\"", "\"") : "";
    }

    static List<String> list(String json, String key) {
        Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*\\[([^\\]]*)\\]").matcher(json);
        List<String> out = new ArrayList<>();
        if (m.find()) {
            Matcher s = Pattern.compile("\"((?:[^\"\\\\]|\\\\.)*)\"").matcher(m.group(1));
            while (s.find()) out.add(s.group(1));
        }
        return out;
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("--version")) {
            System.out.println("JDK " + System.getProperty("java.version") + " (" + System.getProperty("java.vendor") + ") PKIX, JSSE");
            return;
        }
        String mode = args[1];
        String text = Files.readString(Path.of(args[2]));
        // The case file has one JSON object per line inside its array (the driver writes it so).
        for (String line : text.split("\n")) {
            line = line.trim();
            if (!line.startsWith("{")) continue;
            int port = 0;
            Matcher pm = Pattern.compile("\"port\"\\s*:\\s*(\\d+)").matcher(line);
            if (pm.find()) port = Integer.parseInt(pm.group(1));
            Case c = new Case(str(line, "id"), list(line, "chain"), list(line, "roots"), str(line, "host"), str(line, "purpose"), port);
            String r;
            if (mode.equals("builder") || mode.equals("trustmanager")) {
                String[] p = (mode.equals("builder") ? built(c) : trustManager(c)).split("\t", 3);
                String chains = p.length > 2 && !p[2].isEmpty() ? "[[" + String.join(",", Arrays.stream(p[2].split(" ")).map(Verify::quote).toList()) + "]]" : "[]";
                System.out.println("{\"id\":" + quote(c.id()) + ",\"result\":" + quote(p[0]) + ",\"detail\":" + quote(p.length > 1 ? p[1] : "") + ",\"chains\":" + chains + "}");
                continue;
            }
            if (mode.equals("handshake")) r = "client".equals(c.purpose()) ? "n/a\tclient certificates are judged by path validation" : handshake(c);
            else r = path(c);
            String[] parts = r.split("\t", 2);
            System.out.println("{\"id\":" + quote(c.id()) + ",\"result\":" + quote(parts[0]) + ",\"detail\":" + quote(parts.length > 1 ? parts[1] : "") + "}");
        }
    }
}
