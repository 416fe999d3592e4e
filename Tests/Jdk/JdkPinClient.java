// A JDK pinning client for `pinlab check`, written the way the JDK offers it: JSSE's default (PKIX) trust manager over
// a trust store holding the roots of {ca}, HTTPS endpoint identification and SNI for {host}; then, when pins are given,
// the SPKI SHA-256 of every certificate of the *validated* path (rebuilt by CertPathBuilder from the same anchors and
// the certificates the server sent, the anchor included) — never of the chain as sent.
//
// Usage: java -Djdk.net.hosts.file={hosts.file} JdkPinClient.java {host} {port} {ca} {pins}
// Exit 0 when the server was accepted (GET / answered), 1 with the JDK's reason on stderr when it was refused.
import java.io.*;
import java.net.*;
import java.nio.charset.StandardCharsets;
import java.security.*;
import java.security.cert.*;
import java.util.*;
import javax.net.ssl.*;

public class JdkPinClient {
    public static void main(String[] args) throws Exception {
        String host = args[0];
        int port = Integer.parseInt(args[1]);
        Set<String> pins = new HashSet<>();
        if (args.length > 3) for (String p : args[3].split(",")) if (!p.isEmpty()) pins.add(p);

        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        KeyStore roots = KeyStore.getInstance("PKCS12");
        roots.load(null, null);
        Set<TrustAnchor> anchors = new HashSet<>();
        try (InputStream in = new FileInputStream(args[2])) {
            int i = 0;
            for (java.security.cert.Certificate c : cf.generateCertificates(in)) {
                roots.setCertificateEntry("root" + i++, c);
                anchors.add(new TrustAnchor((X509Certificate) c, null));
            }
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(roots);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, tmf.getTrustManagers(), null);

        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(InetAddress.getByName(host), port), 10_000);
            socket.setSoTimeout(10_000);
            SSLSocket s = (SSLSocket) context.getSocketFactory().createSocket(socket, host, port, true);
            SSLParameters parameters = s.getSSLParameters();
            parameters.setEndpointIdentificationAlgorithm("HTTPS");
            parameters.setServerNames(List.of(new SNIHostName(host)));
            s.setSSLParameters(parameters);
            s.startHandshake();

            if (!pins.isEmpty()) {
                List<X509Certificate> sent = new ArrayList<>();
                for (java.security.cert.Certificate c : s.getSession().getPeerCertificates()) sent.add((X509Certificate) c);
                X509CertSelector target = new X509CertSelector();
                target.setCertificate(sent.get(0));
                PKIXBuilderParameters build = new PKIXBuilderParameters(anchors, target);
                build.setRevocationEnabled(false);
                build.addCertStore(CertStore.getInstance("Collection", new CollectionCertStoreParameters(sent)));
                PKIXCertPathBuilderResult path = (PKIXCertPathBuilderResult) CertPathBuilder.getInstance("PKIX").build(build);
                List<X509Certificate> validated = new ArrayList<>();
                for (java.security.cert.Certificate c : path.getCertPath().getCertificates()) validated.add((X509Certificate) c);
                validated.add(path.getTrustAnchor().getTrustedCert());
                MessageDigest sha256 = MessageDigest.getInstance("SHA-256");
                boolean matched = false;
                for (X509Certificate c : validated) {
                    if (pins.contains(Base64.getEncoder().encodeToString(sha256.digest(c.getPublicKey().getEncoded())))) matched = true;
                }
                if (!matched) {
                    System.err.println("pin mismatch: no certificate of the validated path has a pinned key");
                    System.exit(1);
                }
            }
            OutputStream out = s.getOutputStream();
            out.write(("GET / HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String status = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII)).readLine();
            System.out.println(status);
        } catch (IOException | GeneralSecurityException e) {
            System.err.println("refused: " + e);
            System.exit(1);
        }
    }
}
