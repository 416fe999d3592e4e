package com.example.pinninglab;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.Collections;
import java.util.List;
import okhttp3.CertificatePinner;
import okhttp3.Dns;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import okhttp3.tls.HandshakeCertificates;

/**
 * What PinningLabTest in the article "Testing an Android app" does, on the JVM: the article's PinLab helper drives
 * the control API, an OkHttp client pinned to leaf-v1 + the backup key K2 for api.pinning.test calls each server,
 * and each cell's verdict comes from the server's observation. 127.0.0.1 stands for the emulator's 10.0.2.2 and
 * okhttp-tls's HandshakeCertificates for the network security config's trust anchor.
 * Usage: java com.example.pinninglab.AndroidDriver http://127.0.0.1:PORT/ TOKEN   (exit 1 on a wrong cell)
 */
public final class AndroidDriver {
    static final String PROFILE = "leaf-spki+backup";

    public static void main(String[] args) throws Exception {
        PinLab lab = new PinLab(args[0], args[1]);
        X509Certificate root = (X509Certificate) CertificateFactory.getInstance("X.509")
            .generateCertificate(new ByteArrayInputStream(lab.download("trust/lab-root")));
        HandshakeCertificates trust = new HandshakeCertificates.Builder().addTrustedCertificate(root).build();
        CertificatePinner.Builder pins = new CertificatePinner.Builder();
        for (String pin : new String(lab.download("pins?names=leaf-v1,leaf-v3-rekey&format=okhttp"), StandardCharsets.UTF_8).split("\n")) {
            if (!pin.isEmpty()) pins.add("api.pinning.test", pin);
        }
        Dns toHost = hostname -> hostname.equals("api.pinning.test")
            ? Collections.singletonList(InetAddress.getByName("127.0.0.1")) : Dns.SYSTEM.lookup(hostname);
        OkHttpClient client = new OkHttpClient.Builder()
            .sslSocketFactory(trust.sslSocketFactory(), trust.trustManager())
            .certificatePinner(pins.build()).dns(toHost).build();

        int wrong = 0;
        String[] scenarios = {"baseline", "renewal-same-key", "rekey", "emergency-rekey", "sibling-intermediate",
                              "expired-leaf", "wrong-host", "untrusted-rogue", "intercepting-proxy", "chain-stuffing"};
        for (String scenario : scenarios) {
            for (String engine : new String[] {"openssl", "gnutls"}) {
                PinLab.Server server = lab.start(scenario, engine);
                try {
                    boolean claimed = call(client, server);
                    List<PinLab.Observation> seen = lab.observations(server, server.connectionsAccepted);
                    boolean accepted = false;
                    for (PinLab.Observation o : seen) accepted |= o.applicationDataReceived;
                    boolean expected = "accept".equals(server.expected(PROFILE));
                    System.out.println("cell " + scenario + " " + engine + " expected=" + (expected ? "accept" : "refuse")
                        + " observed=" + (accepted ? "accept" : "refuse") + " client=" + (claimed ? "accept" : "refuse") + " " + seen);
                    if (accepted != expected) wrong++;
                } finally {
                    lab.stop(server);
                }
                client.connectionPool().evictAll();
            }
        }

        PinLab.Server server = lab.start("baseline", "gnutls");
        try {
            boolean before = call(client, server);
            int generation = lab.rotate(server, "leaf-v3-rekey").generation;
            client.connectionPool().evictAll();
            boolean after = call(client, server);
            List<PinLab.Observation> seen = lab.observations(server, 0);
            boolean ok = before && after && generation == 1 && seen.size() == 2 && seen.get(1).generation == 1;
            System.out.println("rotation baseline gnutls generation=" + generation + " " + seen + (ok ? " ok" : " WRONG"));
            if (!ok) wrong++;
        } finally {
            lab.stop(server);
        }
        try {
            lab.start("no-such-scenario", "gnutls");
            System.out.println("error WRONG: an unknown scenario was started");
            wrong++;
        } catch (IOException expected) {
            System.out.println("error " + expected.getMessage());
        }
        System.out.println(wrong == 0 ? "all cells right" : wrong + " wrong");
        System.exit(wrong == 0 ? 0 : 1);
    }

    static boolean call(OkHttpClient client, PinLab.Server server) {
        Request request = new Request.Builder().url("https://api.pinning.test:" + server.port + "/").build();
        try (Response r = client.newCall(request).execute()) {
            return r.isSuccessful();
        } catch (IOException refused) {
            return false;
        }
    }
}
