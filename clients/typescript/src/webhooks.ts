/**
 * Checking the signature of a webhook delivery from Herald.
 *
 * A `webhook` channel with a secret signs every request:
 *
 *     X-Herald-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>
 *
 * `verifyWebhook` checks it as docs/channels.md describes: split the header
 * on ",", take `t` and every `v1`, compute the HMAC of the raw body bytes
 * prefixed with "<t>.", compare in constant time, and refuse a `t` more than
 * `toleranceS` seconds from the receiver's clock (either way), so a replayed
 * request is refused too. Pass the body exactly as it arrived (a Buffer, or
 * the string it decodes to), not JSON parsed and stringified again.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADER = "X-Herald-Signature";
export const DEFAULT_TOLERANCE_S = 300;

/**
 * Why a delivery is not to be trusted:
 * - `missing`: no signature header (or an empty one);
 * - `malformed`: no `t` of digits, or no `v1` of 64 hex digits;
 * - `stale`: `t` is more than the tolerance away from now;
 * - `mismatch`: no `v1` is the HMAC of this body with this secret.
 */
export type WebhookFailure = "missing" | "malformed" | "stale" | "mismatch";

export class WebhookVerificationError extends Error {
  readonly reason: WebhookFailure;

  constructor(reason: WebhookFailure, message: string) {
    super(`${reason}: ${message}`);
    this.name = "WebhookVerificationError";
    this.reason = reason;
  }
}

export interface VerifyOptions {
  /** Seconds `t` may be from now, either way (default 300). */
  toleranceS?: number;
  /** Unix seconds to check against (default: this machine's clock). */
  now?: number;
}

const HEX64 = /^[0-9a-fA-F]{64}$/;

/**
 * Returns the signed timestamp `t` when `header` signs `body` with `secret`
 * and `t` is within the tolerance of now; throws `WebhookVerificationError`
 * otherwise.
 */
export function verifyWebhook(
  secret: string | Uint8Array,
  header: string | null | undefined,
  body: string | Uint8Array,
  options: VerifyOptions = {},
): number {
  const toleranceS = options.toleranceS ?? DEFAULT_TOLERANCE_S;
  if (!header || !header.trim()) {
    throw new WebhookVerificationError("missing", `no ${SIGNATURE_HEADER} header`);
  }
  let tText: string | null = null;
  const signatures: Buffer[] = [];
  for (const part of header.split(",")) {
    const at = part.indexOf("=");
    if (at < 0) continue;
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === "t") tText = value;
    else if (key === "v1" && HEX64.test(value)) signatures.push(Buffer.from(value.toLowerCase(), "ascii"));
  }
  if (tText === null || !/^[0-9]+$/.test(tText)) {
    throw new WebhookVerificationError("malformed", "no t=<unix seconds> in the header");
  }
  if (signatures.length === 0) {
    throw new WebhookVerificationError("malformed", "no v1=<64 hex digits> in the header");
  }
  const t = Number(tText);
  const now = options.now ?? Date.now() / 1000;
  if (Math.abs(now - t) > toleranceS) {
    throw new WebhookVerificationError(
      "stale",
      `signed at ${t}, ${Math.round(Math.abs(now - t))} s from now (tolerance ${toleranceS} s)`,
    );
  }
  const expected = Buffer.from(
    createHmac("sha256", typeof secret === "string" ? Buffer.from(secret, "utf8") : secret)
      .update(`${tText}.`, "utf8")
      .update(typeof body === "string" ? Buffer.from(body, "utf8") : body)
      .digest("hex"),
    "ascii",
  );
  // Every v1 is compared, each in constant time, so the time taken does not
  // say which one (or which byte) differed.
  let matched = false;
  for (const candidate of signatures) {
    matched = timingSafeEqual(expected, candidate) || matched;
  }
  if (!matched) {
    throw new WebhookVerificationError("mismatch", "no v1 signature matches this body and secret");
  }
  return t;
}
