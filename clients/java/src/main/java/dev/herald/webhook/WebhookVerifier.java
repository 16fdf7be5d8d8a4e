package dev.herald.webhook;

import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Verifies the {@code X-Herald-Signature} header that Herald's webhook channel
 * sends when the channel has a secret:
 *
 * <pre>X-Herald-Signature: t=&lt;unix seconds&gt;,v1=&lt;hex HMAC-SHA256(secret, "&lt;t&gt;.&lt;body&gt;")&gt;</pre>
 *
 * The HMAC is recomputed over the raw request body, compared with every
 * {@code v1} entry in constant time, and a {@code t} further than the
 * tolerance from the receiver's clock is refused, which refuses replays too.
 * JDK only (Java 8 or later).
 */
public final class WebhookVerifier {
    /** The header that carries the signature. */
    public static final String HEADER = "X-Herald-Signature";

    /** What Herald's docs ask receivers to accept: 5 minutes either way. */
    public static final Duration DEFAULT_TOLERANCE = Duration.ofMinutes(5);

    private static final int SIGNATURE_BYTES = 32;

    private WebhookVerifier() {}

    /** {@link #verify(byte[], String, byte[], Duration, Instant)} with the default tolerance, now. */
    public static void verify(byte[] secret, String header, byte[] body)
            throws WebhookVerificationException {
        verify(secret, header, body, DEFAULT_TOLERANCE, Instant.now());
    }

    /**
     * Returns normally for an authentic request signed within {@code tolerance}
     * of {@code now} ({@code |now - t| <= tolerance}, in whole seconds), else
     * throws with the {@link WebhookVerificationException.Reason}.
     *
     * @param secret the channel's secret, as bytes (UTF-8 of the configured string)
     * @param header the {@code X-Herald-Signature} value, or null when absent
     * @param body the raw request body, exactly as received, before any JSON decoding
     */
    public static void verify(byte[] secret, String header, byte[] body, Duration tolerance, Instant now)
            throws WebhookVerificationException {
        if (header == null || header.trim().isEmpty()) {
            throw new WebhookVerificationException(WebhookVerificationException.Reason.MISSING,
                    "no " + HEADER + " header");
        }
        String ts = null;
        boolean sawV1 = false;
        List<byte[]> signatures = new ArrayList<>();
        for (String part : header.split(",", -1)) {
            String entry = part.trim();
            int eq = entry.indexOf('=');
            if (eq < 0) {
                continue;
            }
            String key = entry.substring(0, eq);
            String value = entry.substring(eq + 1);
            if (key.equals("t")) {
                if (ts != null) {
                    throw malformed("t given twice");
                }
                ts = value;
            } else if (key.equals("v1")) {
                sawV1 = true;
                byte[] sig = decodeHex(value);
                if (sig != null) {
                    signatures.add(sig);
                }
            }
        }
        if (ts == null) {
            throw malformed("no t");
        }
        long t = parseSeconds(ts);
        if (!sawV1) {
            throw malformed("no v1");
        }
        if (signatures.isEmpty()) {
            throw malformed("no v1 is 64 hex digits");
        }

        byte[] want = hmac(secret, ts, body);
        boolean matched = false;
        for (byte[] sig : signatures) {
            // Constant time; every entry is compared.
            if (MessageDigest.isEqual(want, sig)) {
                matched = true;
            }
        }
        if (!matched) {
            throw new WebhookVerificationException(WebhookVerificationException.Reason.MISMATCH,
                    "signature does not match");
        }

        long nowS = now.getEpochSecond();
        long diff = nowS >= t ? nowS - t : t - nowS; // unsigned, cannot overflow as such
        long tol = Math.max(0, tolerance.getSeconds()); // whole seconds, rounded down
        if (Long.compareUnsigned(diff, tol) > 0) {
            throw new WebhookVerificationException(WebhookVerificationException.Reason.STALE,
                    "signature timestamp " + t + " is more than " + tol + " s from " + nowS);
        }
    }

    private static WebhookVerificationException malformed(String why) {
        return new WebhookVerificationException(WebhookVerificationException.Reason.MALFORMED,
                "malformed " + HEADER + ": " + why);
    }

    private static long parseSeconds(String ts) throws WebhookVerificationException {
        if (ts.isEmpty()) {
            throw malformed("t is empty");
        }
        for (int i = 0; i < ts.length(); i++) {
            char c = ts.charAt(i);
            if (c < '0' || c > '9') {
                throw malformed("t is not a Unix time in seconds");
            }
        }
        try {
            return Long.parseLong(ts);
        } catch (NumberFormatException e) {
            throw malformed("t is out of range");
        }
    }

    /** The 32 bytes of 64 hex digits (either case), or null for anything else. */
    private static byte[] decodeHex(String s) {
        if (s.length() != 2 * SIGNATURE_BYTES) {
            return null;
        }
        byte[] out = new byte[SIGNATURE_BYTES];
        for (int i = 0; i < SIGNATURE_BYTES; i++) {
            int hi = hexValue(s.charAt(2 * i));
            int lo = hexValue(s.charAt(2 * i + 1));
            if (hi < 0 || lo < 0) {
                return null;
            }
            out[i] = (byte) ((hi << 4) | lo);
        }
        return out;
    }

    private static int hexValue(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }

    private static byte[] hmac(byte[] secret, String ts, byte[] body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            // SecretKeySpec refuses an empty key; HMAC pads keys with zero
            // bytes, so one zero byte is the same key.
            mac.init(new SecretKeySpec(secret.length == 0 ? new byte[1] : secret, "HmacSHA256"));
            mac.update(ts.getBytes(StandardCharsets.US_ASCII));
            mac.update((byte) '.');
            mac.update(body);
            return mac.doFinal();
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }
}
