"""Checking the signature of a webhook delivery from Herald.

A `webhook` channel with a secret signs every request:

    X-Herald-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>

`verify_webhook` checks it the way docs/channels.md describes: split the
header on ",", take `t` and every `v1`, compute the HMAC of the raw body
bytes prefixed with "<t>.", compare in constant time, and refuse a `t` more
than `tolerance_s` seconds away from the receiver's clock (either way), so a
replayed request is refused too. Pass the body exactly as it arrived: the
bytes, not JSON parsed and dumped again.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time

SIGNATURE_HEADER = "X-Herald-Signature"
DEFAULT_TOLERANCE_S = 300

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


class WebhookVerificationError(Exception):
    """The delivery is not to be trusted. `reason` says why:

    - `missing`: no signature header (or an empty one);
    - `malformed`: the header has no `t` of digits or no `v1` of 64 hex digits;
    - `stale`: `t` is more than the tolerance away from now;
    - `mismatch`: no `v1` is the HMAC of this body with this secret.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason


def verify_webhook(
    secret: str | bytes,
    header: str | None,
    body: bytes | str,
    tolerance_s: int = DEFAULT_TOLERANCE_S,
    now: float | None = None,
) -> int:
    """Returns the signed timestamp `t` when `header` signs `body` with
    `secret` and `t` is within `tolerance_s` of `now` (default: this
    machine's clock); raises `WebhookVerificationError` otherwise."""
    if not header or not header.strip():
        raise WebhookVerificationError("missing", f"no {SIGNATURE_HEADER} header")
    t_text: str | None = None
    signatures: list[bytes] = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "t":
            t_text = value
        elif key == "v1" and _HEX64.fullmatch(value):
            signatures.append(value.lower().encode("ascii"))
    if t_text is None or not t_text.isascii() or not t_text.isdigit():
        raise WebhookVerificationError("malformed", "no t=<unix seconds> in the header")
    if not signatures:
        raise WebhookVerificationError("malformed", "no v1=<64 hex digits> in the header")
    t = int(t_text)
    clock = time.time() if now is None else now
    if abs(clock - t) > tolerance_s:
        raise WebhookVerificationError(
            "stale", f"signed at {t}, {abs(clock - t):.0f} s from now (tolerance {tolerance_s} s)"
        )
    key_bytes = secret.encode("utf-8") if isinstance(secret, str) else secret
    raw = body.encode("utf-8") if isinstance(body, str) else body
    expected = hmac.new(key_bytes, t_text.encode("ascii") + b"." + raw, hashlib.sha256).hexdigest().encode("ascii")
    # Every v1 is compared, each in constant time, so the time taken does
    # not say which one (or which byte) differed.
    matched = False
    for candidate in signatures:
        matched |= hmac.compare_digest(expected, candidate)
    if not matched:
        raise WebhookVerificationError("mismatch", "no v1 signature matches this body and secret")
    return t
