package dev.herald.webhook;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A test runner with no libraries: {@code java dev.herald.webhook.VerifierTest}
 * exits 1 when a check fails. It checks the fixtures that
 * clients/webhook-fixtures/capture.py made from the real herald binary (file
 * named by HERALD_WEBHOOK_FIXTURES; required when HERALD_REQUIRE_FIXTURES=1),
 * then its own cases.
 */
public final class VerifierTest {
    private static int checks;
    private static final List<String> failures = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        fixtures();
        ownCases();
        jsonReader();
        System.out.println("VerifierTest: " + checks + " checks, " + failures.size() + " failed");
        for (String f : failures) {
            System.out.println("  FAIL " + f);
        }
        System.exit(failures.isEmpty() ? 0 : 1);
    }

    private static void check(boolean ok, String what) {
        checks++;
        if (!ok) {
            failures.add(what);
        }
    }

    /** null when verify accepts, else the reason's name in lower case. */
    private static String outcome(String secret, String header, String body, Duration tolerance, Instant now) {
        try {
            WebhookVerifier.verify(secret.getBytes(StandardCharsets.UTF_8), header,
                    body.getBytes(StandardCharsets.UTF_8), tolerance, now);
            return null;
        } catch (WebhookVerificationException e) {
            return e.reason().name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    private static void fixtures() throws Exception {
        String path = System.getenv("HERALD_WEBHOOK_FIXTURES");
        if (path == null || path.isEmpty()) {
            if ("1".equals(System.getenv("HERALD_REQUIRE_FIXTURES"))) {
                check(false, "HERALD_REQUIRE_FIXTURES=1 but HERALD_WEBHOOK_FIXTURES is not set");
            } else {
                System.out.println("VerifierTest: HERALD_WEBHOOK_FIXTURES not set, fixtures skipped");
            }
            return;
        }
        String text = new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.UTF_8);
        Map<?, ?> fx = (Map<?, ?>) new Json(text).document();
        String secret = (String) fx.get("secret");
        Duration tolerance = Duration.ofSeconds(((Number) fx.get("tolerance_s")).longValue());
        List<?> cases = (List<?>) fx.get("cases");
        check(secret != null && !secret.isEmpty() && cases != null && !cases.isEmpty(),
                path + ": no secret or no cases");
        if (cases == null) {
            return;
        }
        int valid = 0;
        for (Object o : cases) {
            Map<?, ?> c = (Map<?, ?>) o;
            String name = (String) c.get("name");
            boolean wantValid = (Boolean) c.get("valid");
            String wantReason = (String) c.get("reason");
            String got = outcome(secret, (String) c.get("header"), (String) c.get("body"), tolerance,
                    Instant.ofEpochSecond(((Number) c.get("now")).longValue()));
            if (wantValid) {
                valid++;
                check(got == null, "fixture " + name + ": want valid, got " + got);
            } else {
                check(wantReason != null && wantReason.equals(got),
                        "fixture " + name + ": want " + wantReason + ", got " + (got == null ? "valid" : got));
            }
        }
        check(valid > 0 && valid < cases.size(), "fixture has " + valid + " valid of " + cases.size());
        System.out.println("VerifierTest: " + cases.size() + " fixture cases from " + path);
    }

    /** What Herald sends, written here apart from the verifier. */
    private static String sign(String secret, long t, String body) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        byte[] d = mac.doFinal((t + "." + body).getBytes(StandardCharsets.UTF_8));
        StringBuilder sb = new StringBuilder("t=").append(t).append(",v1=");
        for (byte b : d) {
            sb.append(String.format("%02x", b & 0xff));
        }
        return sb.toString();
    }

    private static void expect(String name, String want, String secret, String header, String body,
            Duration tolerance, Instant now) {
        String got = outcome(secret, header, body, tolerance, now);
        boolean ok = want == null ? got == null : want.equals(got);
        check(ok, name + ": want " + (want == null ? "valid" : want) + ", got " + (got == null ? "valid" : got));
    }

    private static void ownCases() throws Exception {
        // The vector of the Rust tests, computed once outside Java.
        String vector = "t=1700000000,v1=e79220cb981f992adbc8b93ac6d46028b0217ea19327d27dc9d18bf334403bde";
        check(vector.equals(sign("whsec", 1_700_000_000L, "{\"id\":1}")), "sign() in these tests is off");
        Duration tol = WebhookVerifier.DEFAULT_TOLERANCE;
        expect("fixed vector", null, "whsec", vector, "{\"id\":1}", tol, Instant.ofEpochSecond(1_700_000_000L));

        String secret = "s3cret";
        long at = 1_800_000_000L;
        String body = "{\"id\":7,\"message\":{\"text\":\"h\u00e9llo \ud83c\udf89\"}}";
        String good = sign(secret, at, body);
        String sig = good.substring(good.indexOf("v1=") + 3);
        Instant now = Instant.ofEpochSecond(at);
        expect("good", null, secret, good, body, tol, now);
        expect("sub-second now is truncated", null, secret, good, body, tol, now.plusMillis(300_999));
        expect("tolerance rounds down", null, secret, good, body, Duration.ofMillis(2500), now.plusSeconds(2));
        expect("past a small tolerance", "stale", secret, good, body, Duration.ofMillis(2500), now.plusSeconds(3));
        expect("zero tolerance, same second", null, secret, good, body, Duration.ZERO, now);
        expect("negative tolerance, same second", null, secret, good, body, Duration.ofSeconds(-1), now);
        expect("zero tolerance, a second later", "stale", secret, good, body, Duration.ZERO, now.plusSeconds(1));
        expect("uppercase hex", null, secret, "t=" + at + ",v1=" + sig.toUpperCase(java.util.Locale.ROOT), body, tol, now);
        expect("tabs and spaces", null, secret, "  t=" + at + " ,\tv1=" + sig + "  ", body, tol, now);
        expect("null header", "missing", secret, null, body, tol, now);
        expect("only spaces", "missing", secret, "   ", body, tol, now);
        expect("t twice", "malformed", secret, "t=" + at + ",t=" + at + ",v1=" + sig, body, tol, now);
        expect("t signed", "malformed", secret, "t=+" + at + ",v1=" + sig, body, tol, now);
        expect("t negative", "malformed", secret, "t=-1,v1=" + sig, body, tol, now);
        expect("t empty", "malformed", secret, "t=,v1=" + sig, body, tol, now);
        expect("t overflows long", "malformed", secret, "t=99999999999999999999,v1=" + sig, body, tol, now);
        expect("t non-ASCII digits", "malformed", secret, "t=\u0661\u0662,v1=" + sig, body, tol, now);
        expect("t far future, right HMAC", "stale", secret, sign(secret, 9_000_000_000_000_000_000L, body), body, tol, now);
        expect("v1 short", "malformed", secret, "t=" + at + ",v1=" + sig.substring(0, 62), body, tol, now);
        expect("v1 long", "malformed", secret, "t=" + at + ",v1=" + sig + "00", body, tol, now);
        expect("v1 empty", "malformed", secret, "t=" + at + ",v1=", body, tol, now);
        expect("bad v1 beside a good one", null, secret, "t=" + at + ",v1=xyz,v1=" + sig, body, tol, now);
        expect("key with a space is not t", "malformed", secret, "t =" + at + ",v1=" + sig, body, tol, now);
        expect("empty body signed", null, secret, sign(secret, at, ""), "", tol, now);
        expect("empty body, wrong", "mismatch", secret, sign(secret, at, ""), " ", tol, now);
        expect("forged and stale reports the mismatch", "mismatch", secret, good, body + "x", tol, now.plusSeconds(3600));
        expect("other secret", "mismatch", "other", good, body, tol, now);
        // Java strings are UTF-16; the HMAC is over the UTF-8 bytes.
        expect("body as Latin-1 is not the body", "mismatch", secret, good,
                new String(body.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1), tol, now);
        // The three-argument form: the default tolerance, the real clock.
        long clock = Instant.now().getEpochSecond();
        check(threeArgs(secret, sign(secret, clock, body), body) == null, "three-argument verify, signed now");
        check(threeArgs(secret, sign(secret, clock - 3600, body), body)
                == WebhookVerificationException.Reason.STALE, "three-argument verify, signed an hour ago");
    }

    private static WebhookVerificationException.Reason threeArgs(String secret, String header, String body) {
        try {
            WebhookVerifier.verify(secret.getBytes(StandardCharsets.UTF_8), header, body.getBytes(StandardCharsets.UTF_8));
            return null;
        } catch (WebhookVerificationException e) {
            return e.reason();
        }
    }

    private static void jsonReader() {
        Object v = new Json("{\"a\": [1, -2.5e1, true, false, null, \"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83c\\udf89\"], \"b\": {}}").document();
        Map<?, ?> m = (Map<?, ?>) v;
        List<?> a = (List<?>) m.get("a");
        check(((Number) a.get(0)).longValue() == 1 && ((Number) a.get(1)).doubleValue() == -25.0
                && a.get(2).equals(Boolean.TRUE) && a.get(3).equals(Boolean.FALSE) && a.get(4) == null
                && "x\"\\/\b\f\n\r\t\u00e9\ud83c\udf89".equals(a.get(5))
                && ((Map<?, ?>) m.get("b")).isEmpty(), "the JSON reader: " + v);
        boolean refused;
        try {
            new Json("{\"a\": 1} x").document();
            refused = false;
        } catch (IllegalArgumentException e) {
            refused = true;
        }
        check(refused, "the JSON reader accepted trailing text");
    }

    /** Just enough JSON (RFC 8259) for the fixture file: values into Map, List, String, Long, Double, Boolean, null. */
    static final class Json {
        private final String s;
        private int i;

        Json(String s) {
            this.s = s;
        }

        Object document() {
            Object v = value();
            space();
            if (i != s.length()) {
                throw error("trailing text");
            }
            return v;
        }

        private IllegalArgumentException error(String why) {
            return new IllegalArgumentException("JSON: " + why + " at offset " + i);
        }

        private void space() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
        }

        private void expectChar(char c) {
            space();
            if (i >= s.length() || s.charAt(i) != c) {
                throw error("expected '" + c + "'");
            }
            i++;
        }

        private boolean literal(String word) {
            if (s.startsWith(word, i)) {
                i += word.length();
                return true;
            }
            return false;
        }

        private Object value() {
            space();
            if (i >= s.length()) {
                throw error("unexpected end");
            }
            char c = s.charAt(i);
            if (c == '{') {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                space();
                if (i < s.length() && s.charAt(i) == '}') {
                    i++;
                    return m;
                }
                while (true) {
                    space();
                    String k = string();
                    expectChar(':');
                    m.put(k, value());
                    space();
                    if (i < s.length() && s.charAt(i) == ',') {
                        i++;
                        continue;
                    }
                    expectChar('}');
                    return m;
                }
            }
            if (c == '[') {
                i++;
                List<Object> l = new ArrayList<>();
                space();
                if (i < s.length() && s.charAt(i) == ']') {
                    i++;
                    return l;
                }
                while (true) {
                    l.add(value());
                    space();
                    if (i < s.length() && s.charAt(i) == ',') {
                        i++;
                        continue;
                    }
                    expectChar(']');
                    return l;
                }
            }
            if (c == '"') {
                return string();
            }
            if (literal("true")) {
                return Boolean.TRUE;
            }
            if (literal("false")) {
                return Boolean.FALSE;
            }
            if (literal("null")) {
                return null;
            }
            return number();
        }

        private String string() {
            if (i >= s.length() || s.charAt(i) != '"') {
                throw error("expected a string");
            }
            i++;
            StringBuilder sb = new StringBuilder();
            while (true) {
                if (i >= s.length()) {
                    throw error("unterminated string");
                }
                char c = s.charAt(i++);
                if (c == '"') {
                    return sb.toString();
                }
                if (c < 0x20) {
                    throw error("control character in a string");
                }
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                if (i >= s.length()) {
                    throw error("unterminated escape");
                }
                char e = s.charAt(i++);
                switch (e) {
                    case '"': sb.append('"'); break;
                    case '\\': sb.append('\\'); break;
                    case '/': sb.append('/'); break;
                    case 'b': sb.append('\b'); break;
                    case 'f': sb.append('\f'); break;
                    case 'n': sb.append('\n'); break;
                    case 'r': sb.append('\r'); break;
                    case 't': sb.append('\t'); break;
                    case 'u':
                        if (i + 4 > s.length()) {
                            throw error("short \\u escape");
                        }
                        try {
                            // Surrogate pairs come as two escapes; appending
                            // both UTF-16 units rebuilds the character.
                            sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException ex) {
                            throw error("bad \\u escape");
                        }
                        i += 4;
                        break;
                    default:
                        throw error("bad escape \\" + e);
                }
            }
        }

        private Object number() {
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            String n = s.substring(start, i);
            if (n.isEmpty()) {
                throw error("unexpected character");
            }
            try {
                if (n.indexOf('.') < 0 && n.indexOf('e') < 0 && n.indexOf('E') < 0) {
                    return Long.parseLong(n);
                }
                return Double.parseDouble(n);
            } catch (NumberFormatException ex) {
                throw error("bad number " + n);
            }
        }
    }
}
