"""Python client for Herald's HTTP API.

    from herald_client import Herald, HeraldError

    herald = Herald("http://127.0.0.1:8780")
    timer = herald.timers.create(channel="log", recipient="u1", delay_ms=5000, message={"text": "hi"})

`Herald` is the hand-written layer (retries with idempotency keys, typed
errors, cursor iteration, NDJSON bulk); `herald_client.generated` is the
code openapi-python-client makes from /openapi.json (`clients/generate.sh`);
`herald_client.webhooks.verify_webhook` checks a webhook's signature.
"""

from .client import BulkLine, Herald, new_idempotency_key
from .errors import HeraldConnectionError, HeraldError
from .webhooks import WebhookVerificationError, verify_webhook

__all__ = [
    "BulkLine",
    "Herald",
    "HeraldConnectionError",
    "HeraldError",
    "WebhookVerificationError",
    "new_idempotency_key",
    "verify_webhook",
]
__version__ = "0.1.0"
