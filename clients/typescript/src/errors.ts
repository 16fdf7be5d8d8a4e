/**
 * Errors the client throws. Every error answer of Herald has one shape,
 * `{"error": {"code", "message", "field"?}}`; `HeraldError` carries it with
 * the HTTP status. A request that never got an answer is a
 * `HeraldConnectionError` (status 0, code `connection_error`).
 */

export interface HeraldErrorInit {
  retryAfterS?: number | null;
  body?: unknown;
  attempts?: number;
  cause?: unknown;
}

export class HeraldError extends Error {
  /** The HTTP status (0: no answer). */
  readonly status: number;
  /** The API's error code: `invalid_field`, `not_found`, `not_cancellable`, ... */
  readonly code: string;
  /** The request field at fault, when the server named one. */
  readonly field: string | null;
  /** Seconds the server asked to wait (`Retry-After`), if it did. */
  readonly retryAfterS: number | null;
  /** The whole decoded answer (a bulk cut short keeps its `lines` here). */
  readonly body: unknown;
  /** How many times the request was sent. */
  readonly attempts: number;

  constructor(status: number, code: string, message: string, field: string | null = null, init: HeraldErrorInit = {}) {
    super(`${status} ${code}: ${message}${field ? ` (field ${field})` : ""}`, { cause: init.cause });
    this.name = "HeraldError";
    this.status = status;
    this.code = code;
    this.field = field;
    this.retryAfterS = init.retryAfterS ?? null;
    this.body = init.body;
    this.attempts = init.attempts ?? 1;
  }

  /** The server's own message, without the status and code. */
  get detail(): string {
    const m = /^\d+ [^:]+: (.*?)(?: \(field [^)]*\))?$/s.exec(this.message);
    return m ? m[1] : this.message;
  }

  /** From the `error` object of an answer, or of one bulk line. */
  static fromErrorObject(status: number, error: unknown, init: HeraldErrorInit = {}): HeraldError {
    if (error === null || typeof error !== "object") {
      return new HeraldError(status, `http_${status}`, String(error ?? ""), null, init);
    }
    const e = error as Record<string, unknown>;
    return new HeraldError(
      status,
      typeof e.code === "string" ? e.code : "unknown",
      typeof e.message === "string" ? e.message : "",
      typeof e.field === "string" ? e.field : null,
      init,
    );
  }

  /** From an error answer: `parsed` is its body as openapi-fetch read it. */
  static fromResponse(response: Response, parsed: unknown, attempts = 1): HeraldError {
    const init = { retryAfterS: parseRetryAfter(response.headers.get("retry-after")), body: parsed, attempts };
    if (parsed !== null && typeof parsed === "object" && "error" in parsed) {
      return HeraldError.fromErrorObject(response.status, (parsed as { error: unknown }).error, init);
    }
    // Not Herald's shape: a proxy in between, most likely.
    const text = typeof parsed === "string" ? parsed.slice(0, 200).trim() : "";
    return new HeraldError(response.status, `http_${response.status}`, text || response.statusText, null, init);
  }
}

export class HeraldConnectionError extends HeraldError {
  constructor(message: string, init: HeraldErrorInit = {}) {
    super(0, "connection_error", message, null, init);
    this.name = "HeraldConnectionError";
  }
}

/** `Retry-After` in seconds (delta-seconds or an HTTP date), or null. */
export function parseRetryAfter(value: string | null): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const when = Date.parse(v);
  return Number.isNaN(when) ? null : Math.max(0, (when - Date.now()) / 1000);
}
