import java.text.SimpleDateFormat;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.Date;
import java.util.List;
import java.util.Set;
import java.util.TimeZone;
import org.chromium.net.CronetEngine;

/**
 * Runs the exported PinningLabCronetPins.apply on the stub builder and prints what it was given, one line each:
 * "pin HOST BASE64", "includeSubdomains BOOL", "expiration YYYY-MM-DD", "bypass BOOL".
 */
public final class CronetCheck {
    @SuppressWarnings("unchecked")
    public static void main(String[] args) {
        CronetEngine.Builder b = PinningLabCronetPins.apply(new CronetEngine.Builder());
        SimpleDateFormat day = new SimpleDateFormat("yyyy-MM-dd");
        day.setTimeZone(TimeZone.getTimeZone("UTC"));
        for (Object[] call : b.publicKeyPins) {
            List<String> pins = new ArrayList<>();
            for (byte[] p : (Set<byte[]>) call[1]) {
                if (p.length != 32) throw new IllegalStateException("a pin of " + p.length + " bytes");
                pins.add(Base64.getEncoder().encodeToString(p));
            }
            Collections.sort(pins);
            for (String p : pins) System.out.println("pin " + call[0] + " " + p);
            System.out.println("includeSubdomains " + call[2]);
            System.out.println("expiration " + day.format((Date) call[3]));
        }
        System.out.println("bypass " + b.bypassForLocalTrustAnchors);
    }
}
