"""Hooks of the standing API check (`scripts/schemathesis.py` loads them).

schemathesis has no serializer for NDJSON: Herald's bulk endpoints and
audience uploads take `application/x-ndjson`, whose document schema is that
of one line. A generated value is sent as that one line.
"""

import json

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    if isinstance(value, bytes):
        return value
    # `ensure_ascii` escapes lone surrogates, which UTF-8 cannot carry.
    return (json.dumps(value) + "\n").encode()
