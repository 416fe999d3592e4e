import java.io.FileInputStream;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.URL;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.security.cert.CertificateException;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import okhttp3.CertificatePinner;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * A JVM app behind an HTTP proxy (pinlab intercept), fetching https://HOST/ for each HOST.
 * MODE okhttp: OkHttp's CertificatePinner (pins checked against the cleaned, validated chain).
 * MODE presented: HttpsURLConnection with a TrustManager that validates, then looks for a pin in the chain the
 *   server SENT (the CVE-2016-2402 mistake).
 * MODE none: HttpsURLConnection, no pins.
 * Pins (SPKI SHA-256, base64) apply to hosts matching PIN_PATTERN (exact, or *.domain for one label).
 * Prints "HOST ACCEPT <status>" or "HOST REFUSE <exception>" per host.
 * Usage: java InterceptClient MODE PROXY_PORT TRUST_PEM PIN PIN_PATTERN HOST...
 */
public final class InterceptClient {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        Proxy proxy = new Proxy(Proxy.Type.HTTP, new InetSocketAddress("127.0.0.1", Integer.parseInt(args[1])));
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        int n = 0;
        try (InputStream in = new FileInputStream(args[2])) {
            for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                store.setCertificateEntry("root-" + n++, c);
            }
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(store);
        X509TrustManager trust = (X509TrustManager) tmf.getTrustManagers()[0];
        String pin = args[3];
        String pattern = args[4];
        for (int i = 5; i < args.length; i++) {
            String host = args[i];
            boolean pinned = matches(pattern, host);
            try {
                int code;
                if (mode.equals("okhttp")) {
                    SSLContext context = SSLContext.getInstance("TLS");
                    context.init(null, new TrustManager[] {trust}, null);
                    OkHttpClient client = new OkHttpClient.Builder()
                            .proxy(proxy)
                            .sslSocketFactory(context.getSocketFactory(), trust)
                            .certificatePinner(new CertificatePinner.Builder().add(pattern, "sha256/" + pin).build())
                            .callTimeout(10, TimeUnit.SECONDS)
                            .build();
                    try (Response r = client.newCall(new Request.Builder().url("https://" + host + "/").build()).execute()) {
                        code = r.code();
                    }
                } else {
                    X509TrustManager manager = trust;
                    if (mode.equals("presented") && pinned) {
                        manager = new PresentedChainPinner(trust, pin);
                    }
                    SSLContext context = SSLContext.getInstance("TLS");
                    context.init(null, new TrustManager[] {manager}, null);
                    HttpsURLConnection c = (HttpsURLConnection) new URL("https://" + host + "/").openConnection(proxy);
                    c.setSSLSocketFactory(context.getSocketFactory());
                    c.setConnectTimeout(10000);
                    c.setReadTimeout(10000);
                    code = c.getResponseCode();
                    c.disconnect();
                }
                System.out.println(host + " ACCEPT " + code);
            } catch (Exception e) {
                System.out.println(host + " REFUSE " + e.toString().replace('\n', ' '));
            }
        }
    }

    static boolean matches(String pattern, String host) {
        if (pattern.startsWith("*.")) {
            String domain = pattern.substring(1);
            return host.endsWith(domain) && host.length() > domain.length()
                    && host.substring(0, host.length() - domain.length()).indexOf('.') < 0;
        }
        return pattern.equals(host);
    }

    /** Validates like the platform, then accepts if ANY presented certificate has the pinned key: the bug. */
    static final class PresentedChainPinner implements X509TrustManager {
        private final X509TrustManager delegate;
        private final String pin;
        PresentedChainPinner(X509TrustManager delegate, String pin) { this.delegate = delegate; this.pin = pin; }
        public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            delegate.checkClientTrusted(chain, authType);
        }
        public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            delegate.checkServerTrusted(chain, authType);
            try {
                MessageDigest sha = MessageDigest.getInstance("SHA-256");
                for (X509Certificate c : chain) {
                    String h = Base64.getEncoder().encodeToString(sha.digest(c.getPublicKey().getEncoded()));
                    if (h.equals(pin)) return;
                }
            } catch (java.security.NoSuchAlgorithmException e) {
                throw new CertificateException(e);
            }
            throw new CertificateException("no pinned key in the presented chain");
        }
        public X509Certificate[] getAcceptedIssuers() { return delegate.getAcceptedIssuers(); }
    }
}
