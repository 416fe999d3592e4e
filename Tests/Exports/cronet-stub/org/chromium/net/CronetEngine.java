package org.chromium.net;

import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Set;

/**
 * A stand-in for Cronet's CronetEngine with only the Builder methods the PinningLab export calls, with Cronet's
 * signatures (org.chromium.net.CronetEngine.Builder). It records the calls so CronetCheck can print them.
 */
public abstract class CronetEngine {
    public static class Builder {
        public final List<Object[]> publicKeyPins = new ArrayList<>();
        public Boolean bypassForLocalTrustAnchors = null;

        public Builder addPublicKeyPins(String hostName, Set<byte[]> pinsSha256, boolean includeSubdomains, Date expirationDate) {
            publicKeyPins.add(new Object[] {hostName, pinsSha256, includeSubdomains, expirationDate});
            return this;
        }

        public Builder enablePublicKeyPinningBypassForLocalTrustAnchors(boolean value) {
            bypassForLocalTrustAnchors = value;
            return this;
        }
    }
}
