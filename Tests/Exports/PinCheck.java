import java.io.FileInputStream;
import java.io.InputStream;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * Fetches URL with OkHttp, trusting only the roots in TRUST_PEM and pinning with the exported
 * {@code PinningLabPins.certificatePinner()} (compiled next to this file).
 * Prints "ACCEPT <status>" (exit 0), "REFUSE-PIN <message>" (exit 3) or "ERROR <exception>" (exit 4).
 * Usage: java PinCheck URL TRUST_PEM
 */
public final class PinCheck {
    public static void main(String[] args) throws Exception {
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        int n = 0;
        try (InputStream in = new FileInputStream(args[1])) {
            for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                store.setCertificateEntry("root-" + n++, c);
            }
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(store);
        X509TrustManager trust = (X509TrustManager) tmf.getTrustManagers()[0];
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, new TrustManager[] {trust}, null);
        OkHttpClient client = new OkHttpClient.Builder()
                .sslSocketFactory(context.getSocketFactory(), trust)
                .certificatePinner(PinningLabPins.certificatePinner())
                .connectTimeout(5, TimeUnit.SECONDS)
                .readTimeout(5, TimeUnit.SECONDS)
                .writeTimeout(5, TimeUnit.SECONDS)
                .callTimeout(10, TimeUnit.SECONDS)
                .build();
        try (Response response = client.newCall(new Request.Builder().url(args[0]).build()).execute()) {
            System.out.println("ACCEPT " + response.code());
            System.exit(0);
        } catch (SSLPeerUnverifiedException e) {
            System.out.println("REFUSE-PIN " + e.getMessage().replace('\n', ' '));
            System.exit(3);
        } catch (Exception e) {
            System.out.println("ERROR " + e);
            System.exit(4);
        }
    }
}
