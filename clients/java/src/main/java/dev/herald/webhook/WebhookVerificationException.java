package dev.herald.webhook;

/** Why {@link WebhookVerifier#verify} refused a request. */
public final class WebhookVerificationException extends Exception {
    private static final long serialVersionUID = 1L;

    /** The kinds of refusal, so that a receiver can log or count them apart. */
    public enum Reason {
        /** The header is absent or empty. */
        MISSING,
        /** No {@code t}, {@code t} not a Unix time in seconds or given twice, or no {@code v1} of 64 hex digits. */
        MALFORMED,
        /** The signature is right but {@code t} is further than the tolerance from now. */
        STALE,
        /** No {@code v1} is the HMAC of {@code "<t>.<body>"} under the secret. */
        MISMATCH
    }

    private final Reason reason;

    public WebhookVerificationException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
