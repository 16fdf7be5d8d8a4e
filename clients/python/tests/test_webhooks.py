"""verify_webhook: unit cases, then every case of the fixtures made from
signatures of the real binary (clients/webhook-fixtures)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from herald_client.webhooks import WebhookVerificationError, verify_webhook  # noqa: E402

from support import REPO, herald_binary  # noqa: E402

CAPTURE = REPO / "clients" / "webhook-fixtures" / "capture.py"
SECRET = "s3cret"
BODY = b'{"id":1,"kind":"timer","message":{"text":"h\xc3\xa9"}}'
T = 1_800_000_000


def sign(secret: str, t: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()


class VerifyTest(unittest.TestCase):
    def reason(self, header, body=BODY, now=T, secret=SECRET, tolerance_s=300):
        with self.assertRaises(WebhookVerificationError) as ctx:
            verify_webhook(secret, header, body, tolerance_s=tolerance_s, now=now)
        return ctx.exception.reason

    def test_accepts_a_right_signature(self):
        header = f"t={T},v1={sign(SECRET, T, BODY)}"
        self.assertEqual(verify_webhook(SECRET, header, BODY, now=T), T)
        self.assertEqual(verify_webhook(SECRET.encode(), header, BODY.decode(), now=T + 300), T)
        self.assertEqual(verify_webhook(SECRET, header, BODY, now=T - 300), T)

    def test_uses_the_clock_without_now(self):
        import time

        t = int(time.time())
        self.assertEqual(verify_webhook(SECRET, f"t={t},v1={sign(SECRET, t, BODY)}", BODY), t)
        self.assertEqual(self.reason(f"t={t - 301},v1={sign(SECRET, t - 301, BODY)}", now=None), "stale")

    def test_refusals_name_their_reason(self):
        good = sign(SECRET, T, BODY)
        self.assertEqual(self.reason(None), "missing")
        self.assertEqual(self.reason(""), "missing")
        self.assertEqual(self.reason(f"v1={good}"), "malformed")
        self.assertEqual(self.reason(f"t={T}"), "malformed")
        self.assertEqual(self.reason(f"t=-{T},v1={good}"), "malformed")
        self.assertEqual(self.reason(f"t={T},v1={good[:-2]}"), "malformed")
        self.assertEqual(self.reason(f"t={T},v1={good}", now=T + 301), "stale")
        self.assertEqual(self.reason(f"t={T},v1={good}", now=T - 301), "stale")
        self.assertEqual(self.reason(f"t={T},v1={good}", now=T + 11, tolerance_s=10), "stale")
        self.assertEqual(self.reason(f"t={T},v1={good}", secret="other"), "mismatch")
        self.assertEqual(self.reason(f"t={T},v1={good}", body=BODY + b" "), "mismatch")
        self.assertEqual(self.reason(f"t={T + 1},v1={good}"), "mismatch")

    def test_any_v1_may_match(self):
        good, bad = sign(SECRET, T, BODY), sign("old", T, BODY)
        self.assertEqual(verify_webhook(SECRET, f"t={T},v1={bad},v1={good}", BODY, now=T), T)
        self.assertEqual(verify_webhook(SECRET, f" v1={good.upper()} , t={T} ", BODY, now=T), T)
        self.assertEqual(self.reason(f"t={T},v1={bad},v1={bad}"), "mismatch")


def load_fixtures():
    """The fixture file: HERALD_WEBHOOK_FIXTURES, or made here by capture.py
    with the test binary; None when neither can be had."""
    path = os.environ.get("HERALD_WEBHOOK_FIXTURES")
    if not path:
        try:
            binary = herald_binary()
        except RuntimeError:
            return None
        if not CAPTURE.exists():
            return None
        path = os.path.join(tempfile.mkdtemp(prefix="herald-fixtures-py-"), "fixtures.json")
        subprocess.run([sys.executable, str(CAPTURE), "--herald", binary, "--out", path], check=True)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class FixtureTest(unittest.TestCase):
    def test_every_fixture_case(self):
        fixtures = load_fixtures()
        if fixtures is None:
            if os.environ.get("HERALD_REQUIRE_FIXTURES") == "1":
                self.fail("no webhook fixtures: set HERALD_WEBHOOK_FIXTURES or HERALD_BIN")
            self.skipTest("no webhook fixtures (HERALD_WEBHOOK_FIXTURES or HERALD_BIN)")
        cases = fixtures["cases"]
        self.assertGreater(sum(c["valid"] for c in cases), 0)
        self.assertGreater(sum(not c["valid"] for c in cases), 0)
        for case in cases:
            with self.subTest(case["name"]):
                body = case["body"].encode("utf-8")
                if case["valid"]:
                    t = verify_webhook(
                        fixtures["secret"], case["header"], body, tolerance_s=fixtures["tolerance_s"], now=case["now"]
                    )
                    self.assertIsInstance(t, int)
                else:
                    with self.assertRaises(WebhookVerificationError) as ctx:
                        verify_webhook(
                            fixtures["secret"], case["header"], body, tolerance_s=fixtures["tolerance_s"], now=case["now"]
                        )
                    if case.get("reason"):
                        self.assertEqual(ctx.exception.reason, case["reason"])


if __name__ == "__main__":
    unittest.main()
