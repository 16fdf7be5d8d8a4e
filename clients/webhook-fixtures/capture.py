#!/usr/bin/env python3
"""Builds the webhook-signature fixtures the client verifiers test against.

    capture.py --herald BINARY --out FILE.json

Starts the real `herald serve` with a `webhook` channel that has a secret and
points at a capture server run here, creates a few timers with different
bodies, waits for their signed deliveries, stops Herald, and writes the raw
bodies and `X-Herald-Signature` headers it received, plus cases derived from
them that a verifier must refuse. The format (see README.md beside this file):

    {"secret": "...", "tolerance_s": 300,
     "cases": [{"name", "header", "body", "now", "valid", "reason"}]}

Standard library only.
"""
import argparse
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_S = 300
SIGNATURE_HEADER = "X-Herald-Signature"


class Capture:
    """The deliveries received, by idempotency key (first one kept)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.by_key = {}
        self.arrived = threading.Condition(self.lock)

    def record(self, key, header, body):
        with self.lock:
            self.by_key.setdefault(key, (header, body))
            self.arrived.notify_all()

    def wait_for(self, keys, timeout_s):
        deadline = time.monotonic() + timeout_s
        with self.lock:
            while not all(k in self.by_key for k in keys):
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = sorted(k for k in keys if k not in self.by_key)
                    raise SystemExit(f"capture.py: no delivery for {missing} in {timeout_s} s")
                self.arrived.wait(left)
            return {k: self.by_key[k] for k in keys}


def capture_server(capture):
    class Handler(BaseHTTPRequestHandler):
        # Herald keeps its connections alive: answer in HTTP/1.1 with a length.
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            capture.record(self.headers.get("Idempotency-Key", ""),
                           self.headers.get(SIGNATURE_HEADER), body)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def start_herald(binary, workdir, hook_url, secret):
    cfg = os.path.join(workdir, "herald.toml")
    with open(cfg, "w") as f:
        f.write(
            'listen = "127.0.0.1:0"\n'
            f'store = "sqlite://{workdir}/herald.db"\n'
            "\n[[channels]]\n"
            'name = "hooks"\n'
            'kind = "webhook"\n'
            f'url = "{hook_url}"\n'
            'secret_env = "HERALD_FIXTURE_SECRET"\n'
        )
    # Only this file's configuration: no HERALD_* setting of the caller's.
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    env["HERALD_FIXTURE_SECRET"] = secret
    log = open(os.path.join(workdir, "herald.log"), "w")
    proc = subprocess.Popen([binary, "serve", "--config", cfg], env=env,
                            stdout=subprocess.PIPE, stderr=log, text=True)
    base = None
    for line in proc.stdout:
        m = re.search(r"listening on (http://\S+)", line)
        if m:
            base = m.group(1).rstrip("/")
            break
    if base is None:
        proc.wait()
        with open(os.path.join(workdir, "herald.log")) as f:
            sys.stderr.write(f.read()[-4000:])
        raise SystemExit("capture.py: herald did not start")
    # Keep draining stdout so Herald never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    return proc, base


def stop_herald(proc):
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def create_timer(base, key, recipient, message_text):
    """POST /v1/timers with `message_text` spliced in as written: Herald
    passes a message's JSON text through to the webhook body verbatim, so its
    spacing and escapes reach the signed bytes."""
    head = json.dumps({"delay_ms": 0, "channel": "hooks", "recipient": recipient,
                       "idempotency_key": key}, ensure_ascii=False)
    body = (head[:-1] + ', "message": ' + message_text + "}").encode("utf-8")
    req = urllib.request.Request(f"{base}/v1/timers", data=body, method="POST",
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        if r.status not in (200, 201):
            raise SystemExit(f"capture.py: POST /v1/timers answered {r.status}")


def timers():
    """(name, idempotency key, recipient, message JSON text) of each delivery
    to capture."""
    unicode_text = ("Grüße, 你好, こんにちは, مرحبا, שלום, 🎉👩‍💻, e\u0301, "
                    "\u2028 line sep, tab\tquote\" backslash\\ slash/")
    nested = {"order": {"id": 1001, "lines": [{"sku": "A-1", "qty": 2, "price": 9.5},
                                               {"sku": "B-2", "qty": 1, "price": None}],
                        "flags": {"gift": True, "rush": False}, "empty": {}, "none": []},
              "deep": {"a": {"b": {"c": {"d": {"e": [1, [2, [3, {"f": "g"}]]]}}}}},
              "numbers": [0, -1, 1.5e300, 123456789012345678]}
    # Large-ish: about 40 KiB, under the 64 KiB limit of a timer's body.
    large = {"text": "".join(f"line {i:05d}: lorem ipsum dolor sit amet\n" for i in range(1000)),
             "blob": secrets.token_hex(2048)}
    return [
        ("plain", "fixture-plain", "order-1001",
         json.dumps({"action": "auto-rate", "stars": 5}, separators=(",", ":"))),
        # Raw UTF-8 (multi-byte, astral, U+2028) in the signed bytes.
        ("unicode", "fixture-unicode", "user-\"ß\"-42",
         json.dumps({"text": unicode_text}, ensure_ascii=False)),
        # Newlines, indentation and \u escapes in the signed bytes.
        ("nested", "fixture-nested", "u2", json.dumps(nested, indent=2)),
        ("large", "fixture-large", "u3", json.dumps(large, separators=(",", ":"))),
    ]


def sign(secret, t, body):
    return hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()


def parse_header(header):
    """The server's exact form: `t=<digits>,v1=<64 lowercase hex>`."""
    m = re.fullmatch(r"t=([0-9]+),v1=([0-9a-f]{64})", header or "")
    if not m:
        raise SystemExit(f"capture.py: unexpected {SIGNATURE_HEADER}: {header!r}")
    return int(m.group(1)), m.group(2)


def derive_cases(secret, captured):
    """The fixture cases: each real delivery, valid at t and at the edges of
    the tolerance, then invalid variants of the first ones."""
    cases = []

    def case(name, header, body, now, reason):
        cases.append({"name": name, "header": header, "body": body, "now": now,
                      "valid": reason is None, "reason": reason})

    for name, (header, raw) in captured:
        t, sig = parse_header(header)
        # Sanity check of the scheme this file documents, before anything is
        # built on it: the server must sign "<t>.<raw body>".
        if not hmac.compare_digest(sig, sign(secret, t, raw)):
            raise SystemExit(f"capture.py: {name}: the server's signature is not "
                             f"HMAC-SHA256(secret, '<t>.<body>')")
        body = raw.decode("utf-8")
        case(f"{name}: as delivered, now = t", header, body, t, None)
        case(f"{name}: now = t + tolerance - 1", header, body, t + TOLERANCE_S - 1, None)

    name, (header, raw) = captured[0]
    t, sig = parse_header(header)
    body = raw.decode("utf-8")
    # The docs: "refuses a t more than 5 minutes from its own clock", so both
    # edges are inside, one second past either is out.
    case(f"{name}: now = t + tolerance (edge, inside)", header, body, t + TOLERANCE_S, None)
    case(f"{name}: now = t - tolerance (edge, inside)", header, body, t - TOLERANCE_S, None)
    case(f"{name}: stale, now = t + tolerance + 1", header, body, t + TOLERANCE_S + 1, "stale")
    case(f"{name}: stale by a day", header, body, t + 86400, "stale")
    case(f"{name}: t in the future beyond tolerance", header, body, t - TOLERANCE_S - 1, "stale")

    # Same layout, other spacing and order: the docs say to split on "," and
    # strip, and take t and every v1 wherever they are.
    case(f"{name}: space after the comma", f"t={t}, v1={sig}", body, t, None)
    case(f"{name}: v1 before t", f"v1={sig},t={t}", body, t, None)
    case(f"{name}: unknown scheme entries ignored", f"t={t},v0=abc,v1={sig},v2=def", body, t,
         None)
    # Every v1 is tried (as in the docs and the mock): one right one is enough.
    wrong = sign("not-the-secret", t, raw)
    case(f"{name}: two v1, the second right", f"t={t},v1={wrong},v1={sig}", body, t, None)
    case(f"{name}: two v1, the first right", f"t={t},v1={sig},v1={wrong}", body, t, None)
    case(f"{name}: two v1, both wrong", f"t={t},v1={wrong},v1={'0' * 64}", body, t, "mismatch")

    # Tampering.
    other_raw = captured[1][1][1]
    flip_at = len(body) // 2
    while not body[flip_at].isalnum():
        flip_at += 1
    swapped = "x" if body[flip_at] != "x" else "y"
    case(f"{name}: body changed by one byte", header,
         body[:flip_at] + swapped + body[flip_at + 1:], t, "mismatch")
    case(f"{name}: body with a trailing newline", header, body + "\n", t, "mismatch")
    case(f"{name}: body of another delivery", header, other_raw.decode("utf-8"), t, "mismatch")
    # A receiver must hash the bytes it received, not a re-encoding of them.
    uname, (uheader, uraw) = captured[1]
    ubody = uraw.decode("utf-8")
    ut = parse_header(uheader)[0]
    nfc = unicodedata.normalize("NFC", ubody)
    assert nfc != ubody, "the unicode body has nothing for NFC to change"
    case(f"{uname}: body normalized to NFC", uheader, nfc, ut, "mismatch")
    nname, (nheader, nraw) = captured[2]
    compact = json.dumps(json.loads(nraw), separators=(",", ":"), ensure_ascii=False)
    assert compact.encode() != nraw, "the nested body is compact already"
    case(f"{nname}: body re-serialized compactly", nheader, compact, parse_header(nheader)[0],
         "mismatch")
    case(f"{name}: signed with another secret", f"t={t},v1={wrong}", body, t, "mismatch")
    # The HMAC covers t: moving t (to pass the age check) breaks it.
    case(f"{name}: t moved by one second", f"t={t + 1},v1={sig}", body, t, "mismatch")
    case(f"{name}: signature of the body alone (the old scheme)",
         f"t={t},v1={hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()}", body, t,
         "mismatch")
    case(f"{name}: v1 with one hex digit changed",
         f"t={t},v1={sig[:-1]}{'0' if sig[-1] != '0' else '1'}", body, t, "mismatch")

    # Malformed or missing headers.
    case(f"{name}: empty header", "", body, t, "missing")
    case(f"{name}: no t", f"v1={sig}", body, t, "malformed")
    case(f"{name}: no v1", f"t={t}", body, t, "malformed")
    case(f"{name}: t not a number", f"t=abc,v1={sig}", body, t, "malformed")
    case(f"{name}: v1 not hex", f"t={t},v1={'z' * 64}", body, t, "malformed")
    case(f"{name}: the old header form", f"sha256={sig}", body, t, "malformed")
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--herald", required=True, help="the herald binary")
    ap.add_argument("--out", required=True, help="where to write the fixture JSON")
    ap.add_argument("--timeout", type=float, default=30, help="seconds to wait for deliveries")
    args = ap.parse_args()

    secret = "whsec_fixture_" + secrets.token_hex(16)
    capture = Capture()
    server = capture_server(capture)
    workdir = tempfile.mkdtemp(prefix="herald-webhook-fixtures-")
    proc = None
    try:
        proc, base = start_herald(args.herald, workdir,
                                  f"http://127.0.0.1:{server.server_port}/hook", secret)
        wanted = timers()
        for _, key, recipient, message in wanted:
            create_timer(base, key, recipient, message)
        got = capture.wait_for([key for _, key, _, _ in wanted], args.timeout)
    finally:
        if proc is not None:
            stop_herald(proc)
        server.shutdown()
    captured = [(name, got[key]) for name, key, _, _ in wanted]
    cases = derive_cases(secret, captured)
    out = {"secret": secret, "tolerance_s": TOLERANCE_S, "cases": cases}
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)
    shutil.rmtree(workdir, ignore_errors=True)
    valid = sum(c["valid"] for c in cases)
    print(f"capture.py: {len(captured)} signed deliveries, {len(cases)} cases "
          f"({valid} valid) -> {args.out}")


if __name__ == "__main__":
    main()
