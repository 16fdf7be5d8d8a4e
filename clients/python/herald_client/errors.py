"""Errors the client raises.

Every error answer of Herald has one shape, `{"error": {"code", "message",
"field"?}}`; `HeraldError` carries it with the HTTP status. A request that
never got an answer (the connection failed, and retrying was not safe or
did not help) is a `HeraldConnectionError`.
"""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

import httpx


class HeraldError(Exception):
    """An error answer of the API.

    `code` is the API's error code (`invalid_field`, `not_found`,
    `not_cancellable`, ...), `field` the request field at fault when the
    server named one, `status` the HTTP status, `retry_after` the seconds
    the server asked to wait (`Retry-After`), `attempts` how many times the
    request was sent. `body` is the whole decoded answer: a bulk request cut
    short keeps the lines answered before the cut in `body["lines"]`.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None = None,
        *,
        retry_after: float | None = None,
        body: Any = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(f"{status} {code}: {message}" + (f" (field {field})" if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retry_after = retry_after
        self.body = body
        self.attempts = attempts

    @classmethod
    def from_error_object(cls, status: int, error: Any, **kw: Any) -> "HeraldError":
        """From the `error` object of an answer or of one bulk line."""
        if not isinstance(error, dict):
            return cls(status, "unknown", repr(error), **kw)
        field = error.get("field")
        return cls(
            status,
            str(error.get("code", "unknown")),
            str(error.get("message", "")),
            field if isinstance(field, str) else None,
            **kw,
        )

    @classmethod
    def from_response(cls, response: httpx.Response, attempts: int = 1) -> "HeraldError":
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        try:
            body = json.loads(response.content)
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            return cls.from_error_object(
                response.status_code, body["error"], retry_after=retry_after, body=body, attempts=attempts
            )
        # Not Herald's shape: a proxy in between, most likely.
        text = response.text[:200].strip() or response.reason_phrase
        return cls(
            response.status_code,
            "http_" + str(response.status_code),
            text,
            retry_after=retry_after,
            body=body,
            attempts=attempts,
        )


class HeraldConnectionError(HeraldError):
    """No answer: the connection failed (code `connection_error`, status 0)."""

    def __init__(self, message: str, *, attempts: int = 1) -> None:
        super().__init__(0, "connection_error", message, attempts=attempts)


def parse_retry_after(value: str | None) -> float | None:
    """`Retry-After` in seconds (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
