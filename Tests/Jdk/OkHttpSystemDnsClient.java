// An OkHttp 3 client for `pinlab check` that resolves the way an app does when it leaves OkHttp's `Dns` alone:
// `Dns.SYSTEM`, i.e. the JVM's resolver — in a check, `-Djdk.net.hosts.file={hosts.file}`. It trusts only the roots
// of {ca} and pins with a `CertificatePinner` for {pins.okhttp.pattern} (no pins under the profile `none`).
//
// Usage: java -Djdk.net.hosts.file={hosts.file} -cp CLASSES:okhttp.jar:okio.jar OkHttpSystemDnsClient \
//            {url} {ca} {pins.okhttp.pattern} {pins.okhttp}
// Exit 0 when the request was answered, 3 on a pin mismatch (SSLPeerUnverifiedException), 4 on anything else
// (an UnknownHostException included), with the reason on stderr.
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
import okhttp3.CertificatePinner;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

public final class OkHttpSystemDnsClient {
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
        CertificatePinner.Builder pinner = new CertificatePinner.Builder();
        String pattern = args.length > 2 ? args[2] : "";
        String pins = args.length > 3 ? args[3] : "";
        if (!pattern.isEmpty() && !pins.isEmpty()) pinner.add(pattern, pins.split(","));
        OkHttpClient client = new OkHttpClient.Builder()  // no .dns(…): Dns.SYSTEM
                .sslSocketFactory(context.getSocketFactory(), trust)
                .certificatePinner(pinner.build())
                .connectTimeout(5, TimeUnit.SECONDS)
                .readTimeout(5, TimeUnit.SECONDS)
                .writeTimeout(5, TimeUnit.SECONDS)
                .callTimeout(8, TimeUnit.SECONDS)
                .build();
        try (Response response = client.newCall(new Request.Builder().url(args[0]).build()).execute()) {
            System.err.println("ACCEPT " + response.code());
            System.exit(0);
        } catch (SSLPeerUnverifiedException e) {
            System.err.println("REFUSE-PIN " + e.getMessage().replace('\n', ' '));
            System.exit(3);
        } catch (Exception e) {
            System.err.println("ERROR " + e);
            System.exit(4);
        }
    }
}
