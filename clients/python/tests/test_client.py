"""The Python client against a real `herald serve` (HERALD_BIN, else
target/debug/herald), over HTTP: every test calls the node and checks what
it answered."""

from __future__ import annotations

import datetime
import sys
import time
import unittest
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from herald_client import BulkLine, Herald, HeraldConnectionError, HeraldError  # noqa: E402
from herald_client.generated.api.timers import getv1_timers_id_deliveries  # noqa: E402

from support import FaultProxy, Node  # noqa: E402


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def in_hours(hours: float) -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=hours)


class ClientTest(unittest.TestCase):
    node: Node
    proxy: FaultProxy

    @classmethod
    def setUpClass(cls) -> None:
        cls.node = Node()
        cls.proxy = FaultProxy(cls.node.url)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.proxy.stop()
        cls.node.stop()

    def setUp(self) -> None:
        self.herald = Herald(self.node.url)
        self.sleeps: list[float] = []

    def tearDown(self) -> None:
        self.herald.close()

    def via_proxy(self, **kw) -> Herald:
        """A client that goes through the fault proxy and records its waits."""
        herald = Herald(self.proxy.url, sleep=lambda s: (self.sleeps.append(s), time.sleep(s)), **kw)
        self.addCleanup(herald.close)
        return herald

    # Timers.

    def test_create_then_get(self):
        fire_at = in_hours(1).replace(microsecond=0)
        key = unique("order")
        timer = self.herald.timers.create(
            channel="log", recipient="order-1001", fire_at=fire_at, message={"stars": 5}, priority=7, idempotency_key=key
        )
        self.assertEqual(timer.state, "pending")
        self.assertEqual(timer.kind, "timer")
        self.assertEqual(timer.priority, 7)
        self.assertEqual(timer.idempotency_key, key)
        self.assertEqual(datetime.datetime.fromisoformat(timer.due_at), fire_at)

        got = self.herald.timers.get(timer.id)
        self.assertEqual(got.id, timer.id)
        self.assertEqual(got.recipient, "order-1001")
        self.assertEqual(got.message.to_dict(), {"stars": 5})

        # The same key again: the same timer, nothing new.
        again = self.herald.timers.create(channel="log", recipient="x", delay_ms=5, message={}, idempotency_key=key)
        self.assertEqual(again.id, timer.id)
        self.assertEqual(again.recipient, "order-1001")

    def test_create_makes_an_idempotency_key(self):
        timer = self.herald.timers.create(channel="log", recipient="u1", delay_ms=3_600_000, message={})
        self.assertTrue(timer.idempotency_key.startswith("py-"), timer.idempotency_key)

    def test_a_timer_fires_and_is_delivered(self):
        timer = self.herald.timers.create(channel="log", recipient="u1", delay_ms=0, message={"now": True})
        deadline = time.monotonic() + 15
        while self.herald.timers.get(timer.id).state != "done":
            self.assertLess(time.monotonic(), deadline, "the timer was not delivered in 15 s")
            time.sleep(0.1)
        # A route the layer does not wrap, through the generated code.
        deliveries = getv1_timers_id_deliveries.sync(client=self.herald.client, id=timer.id)
        self.assertEqual([d.outcome for d in deliveries.deliveries], ["delivered"])

    def test_list_follows_the_cursor_over_pages(self):
        recipient = unique("pages")
        base = in_hours(2)
        made = [
            self.herald.timers.create(
                channel="log", recipient=recipient, fire_at=base + datetime.timedelta(minutes=i), message={"i": i}
            ).id
            for i in range(7)
        ]
        first = self.herald.timers.list(recipient=recipient, limit=3)
        self.assertEqual([t.id for t in first.timers], made[:3])
        self.assertIsInstance(first.next_cursor, str)

        pages = []
        real_call = self.herald.call

        def counting_call(route, *args, **kw):
            page = real_call(route, *args, **kw)
            pages.append(len(page.timers))
            return page

        self.herald.call = counting_call
        seen = [t.id for t in self.herald.timers.iterate(recipient=recipient, page_size=3)]
        self.assertEqual(seen, made)
        self.assertEqual(pages, [3, 3, 1])

        newest_first = [t.id for t in self.herald.timers.iterate(recipient=recipient, order="desc", page_size=2)]
        self.assertEqual(newest_first, made[::-1])

    def test_cancel(self):
        timer = self.herald.timers.create(channel="log", recipient="u1", delay_ms=3_600_000, message={})
        cancelled = self.herald.timers.cancel(timer.id)
        self.assertEqual(cancelled.id, timer.id)
        self.assertEqual(cancelled.state, "cancelled")
        self.assertEqual(self.herald.timers.get(timer.id).state, "cancelled")
        with self.assertRaises(HeraldError) as ctx:
            self.herald.timers.cancel(timer.id)
        self.assertEqual((ctx.exception.status, ctx.exception.code), (409, "not_cancellable"))

    def test_bulk_answers_each_line(self):
        key = unique("bulk")
        lines = [
            {"channel": "log", "recipient": "a", "delay_ms": 3_600_000, "message": {"n": 1}, "idempotency_key": key},
            {"channel": "nope", "recipient": "b", "delay_ms": 1000, "message": {}},
            {"channel": "log", "recipient": "c", "fire_at": in_hours(1), "message": {"n": 3}},
        ]
        answers = self.herald.timers.bulk(lines)
        self.assertEqual([a.line for a in answers], [1, 2, 3])
        self.assertEqual([a.status for a in answers], [201, 400, 201])
        self.assertTrue(answers[0].ok and answers[2].ok)
        self.assertFalse(answers[1].ok)
        self.assertEqual((answers[1].error.code, answers[1].error.field), ("unknown_channel", "channel"))
        self.assertIsNone(answers[1].id)
        self.assertEqual(self.herald.timers.get(answers[0].id).idempotency_key, key)
        self.assertEqual(self.herald.timers.get(answers[2].id).recipient, "c")

        # Sent again with the same keys, the lines find their timers.
        again = self.herald.timers.bulk([lines[0]])
        self.assertEqual((again[0].status, again[0].id), (200, answers[0].id))

    # Reminders.

    def test_subject_and_reminder(self):
        subject = unique("coupon")
        start = in_hours(2).replace(microsecond=0)
        made = self.herald.subjects.put(subject, start_at=start, title="Coupon opens", data={"sku": 42})
        self.assertEqual(made.subject_id, subject)

        reminder = self.herald.reminders.create(user_id="alice", subject_id=subject, channel_type="app", lead_minutes=5)
        self.assertEqual(reminder.state, "pending")
        self.assertEqual(reminder.channel, "log")
        self.assertEqual(datetime.datetime.fromisoformat(reminder.fire_at), start - datetime.timedelta(minutes=5))
        self.assertEqual(self.herald.timers.get(reminder.timer_id).kind, "reminder")

        detail = self.herald.subjects.get(subject)
        self.assertEqual((detail.subscribers, detail.reminders), (1, 1))
        mine = self.herald.reminders.of_user("alice")
        self.assertIn(subject, [s.subject_id for s in mine.subjects])

        with self.assertRaises(HeraldError) as ctx:
            self.herald.reminders.create(user_id="alice", subject_id=subject, channel_type="app", lead_minutes=5)
        self.assertEqual((ctx.exception.status, ctx.exception.code), (409, "reminder_exists"))

        with self.assertRaises(HeraldError) as ctx:
            self.herald.reminders.create(user_id="alice", subject_id=subject, channel_type="app", lead_minutes=7)
        self.assertEqual((ctx.exception.status, ctx.exception.field), (400, "lead_minutes"))

        # Moving the subject moves the reminder.
        moved = self.herald.subjects.put(subject, start_at=start + datetime.timedelta(hours=1))
        self.assertEqual(moved.moved_reminders, 1)
        timer = self.herald.timers.get(reminder.timer_id)
        self.assertEqual(datetime.datetime.fromisoformat(timer.due_at), start + datetime.timedelta(minutes=55))

        cleared = self.herald.reminders.delete("alice", subject, channel_type="app")
        self.assertEqual(cleared.cancelled_timers, [reminder.timer_id])
        self.assertEqual(self.herald.timers.get(reminder.timer_id).state, "cancelled")

    def test_reminders_bulk_and_subject_listing(self):
        subjects = sorted(unique("launch") for _ in range(3))
        for s in subjects:
            self.herald.subjects.put(s, start_at=in_hours(3))
        answers = self.herald.reminders.bulk(
            [
                {"user_id": "bob", "subject_id": subjects[0], "channel_type": "email", "lead_minutes": 10},
                {"user_id": "bob", "subject_id": "no-such-subject", "channel_type": "email", "lead_minutes": 10},
            ]
        )
        self.assertEqual([a.status for a in answers], [201, 404])
        self.assertEqual(answers[1].error.code, "subject_not_found")
        listed = [s.subject_id for s in self.herald.subjects.iterate(page_size=1)]
        for s in subjects:
            self.assertIn(s, listed)
        self.assertEqual(listed, sorted(listed))

    # Jobs.

    def test_job_to_an_audience(self):
        audience = self.herald.audiences.create(["u1", "u2", "u3", "u2"], name=unique("followers"))
        self.assertEqual((audience.size, audience.duplicates_removed), (3, 1))
        job = self.herald.jobs.create(
            audience_id=audience.id, channel="log", message={"text": "20 off today"}, deadline_secs=3600
        )
        self.assertEqual(job.audience_id, audience.id)
        done = self.herald.jobs.wait(job.id, timeout_s=30)
        self.assertEqual(done.state, "done")
        self.assertEqual((done.totals.total, done.totals.sent, done.totals.failed), (3, 3, 0))
        sends = self.herald.jobs.sends(job.id, 0, 3).sends
        self.assertEqual([s.recipient for s in sends], ["u1", "u2", "u3"])
        self.assertEqual({s.state for s in sends}, {"delivered"})
        # Cancelling a job that ended answers it as it is.
        self.assertEqual(self.herald.jobs.cancel(job.id).state, "done")
        self.assertIn(job.id, [j.id for j in self.herald.jobs.iterate(page_size=1)])

    def test_job_to_users_inline(self):
        job = self.herald.jobs.create(users=["a", "b"], channel="log", message={"x": 1})
        self.assertEqual(self.herald.jobs.wait(job.id, timeout_s=30).totals.sent, 2)

    # Errors.

    def test_errors_carry_code_field_and_status(self):
        with self.assertRaises(HeraldError) as ctx:
            self.herald.timers.create(channel="log", recipient="u1", delay_ms=1000, message={}, priority=12)
        err = ctx.exception
        self.assertEqual((err.status, err.code, err.field), (400, "invalid_field", "priority"))
        self.assertIn("priority", err.message)

        with self.assertRaises(HeraldError) as ctx:
            self.herald.timers.get(987654321)
        self.assertEqual((ctx.exception.status, ctx.exception.code, ctx.exception.field), (404, "not_found", None))

        with self.assertRaises(HeraldError) as ctx:
            self.herald.timers.create(channel="log", recipient="u1", delay_ms=1, message={}, idempotency_key="herald-x")
        self.assertEqual((ctx.exception.code, ctx.exception.field), ("invalid_field", "idempotency_key"))

        with self.assertRaises(HeraldError) as ctx:
            self.herald.jobs.create(channel="log", message={})
        self.assertEqual(ctx.exception.status, 400)

    def test_no_server(self):
        herald = Herald("http://127.0.0.1:9", retries=1, sleep=self.sleeps.append)
        with self.assertRaises(HeraldConnectionError) as ctx:
            herald.timers.get(1)
        self.assertEqual((ctx.exception.code, ctx.exception.attempts), ("connection_error", 2))
        self.assertEqual(len(self.sleeps), 1)

    # Retries, with the fault proxy in front of the node.

    def test_lost_answer_to_a_create_is_retried_with_the_same_key(self):
        herald = self.via_proxy()
        recipient = unique("lost")
        self.proxy.fail("POST", "/v1/timers", "lose_answer")
        before = self.proxy.count("POST", "/v1/timers")
        timer = herald.timers.create(channel="log", recipient=recipient, delay_ms=3_600_000, message={})
        self.assertEqual(self.proxy.count("POST", "/v1/timers") - before, 2)
        # Both tries reached Herald; one timer exists, the one answered.
        stored = list(self.herald.timers.iterate(recipient=recipient))
        self.assertEqual([t.id for t in stored], [timer.id])

    def test_lost_answer_to_a_bulk_is_retried_without_duplicates(self):
        herald = self.via_proxy()
        recipient = unique("lostbulk")
        self.proxy.fail("POST", "/v1/timers:bulk", "lose_answer")
        answers = herald.timers.bulk(
            [{"channel": "log", "recipient": recipient, "delay_ms": 3_600_000, "message": {"n": n}} for n in range(3)]
        )
        self.assertEqual([a.status for a in answers], [200, 200, 200])
        stored = sorted(t.id for t in self.herald.timers.iterate(recipient=recipient))
        self.assertEqual(stored, sorted(a.id for a in answers))

    def test_unavailable_waits_as_retry_after_asks(self):
        herald = self.via_proxy()
        self.proxy.fail("POST", "/v1/timers", "unavailable")
        self.proxy.fail("POST", "/v1/timers", "unavailable")
        started = time.monotonic()
        timer = herald.timers.create(channel="log", recipient="u1", delay_ms=3_600_000, message={})
        self.assertGreaterEqual(time.monotonic() - started, 2.0)
        self.assertEqual(len(self.sleeps), 2)
        self.assertTrue(all(s >= 1.0 for s in self.sleeps), self.sleeps)
        self.assertEqual(self.herald.timers.get(timer.id).state, "pending")

    def test_retries_give_up(self):
        herald = self.via_proxy(retries=1)
        self.proxy.fail("GET", "/v1/timers/1", "unavailable")
        self.proxy.fail("GET", "/v1/timers/1", "unavailable")
        with self.assertRaises(HeraldError) as ctx:
            herald.timers.get(1)
        self.assertEqual((ctx.exception.status, ctx.exception.code, ctx.exception.attempts), (503, "unavailable", 2))
        self.assertEqual(ctx.exception.retry_after, 1.0)

    def test_a_create_without_a_key_is_not_sent_twice(self):
        herald = self.via_proxy()
        marker = unique("job")
        before = [j.id for j in self.herald.jobs.iterate()]
        self.proxy.fail("POST", "/v1/jobs", "lose_answer")
        count = self.proxy.count("POST", "/v1/jobs")
        with self.assertRaises(HeraldConnectionError):
            herald.jobs.create(users=["a"], channel="log", message={"m": marker})
        self.assertEqual(self.proxy.count("POST", "/v1/jobs") - count, 1)
        new = [j for j in self.herald.jobs.iterate() if j.id not in before]
        self.assertEqual([j.message.to_dict() for j in new], [{"m": marker}])

    def test_lost_answer_to_a_reminder_reads_it_back(self):
        herald = self.via_proxy()
        subject = unique("sale")
        self.herald.subjects.put(subject, start_at=in_hours(2))
        self.proxy.fail("POST", "/v1/reminders", "lose_answer")
        reminder = herald.reminders.create(user_id="carol", subject_id=subject, channel_type="sms", lead_minutes=15)
        self.assertEqual((reminder.subject_id, reminder.lead_minutes, reminder.state), (subject, 15, "pending"))
        self.assertEqual(self.herald.timers.get(reminder.timer_id).kind, "reminder")

    def test_lost_answer_to_a_cancel(self):
        herald = self.via_proxy()
        timer = self.herald.timers.create(channel="log", recipient="u1", delay_ms=3_600_000, message={})
        self.proxy.fail("DELETE", f"/v1/timers/{timer.id}", "lose_answer")
        self.assertEqual(herald.timers.cancel(timer.id).state, "cancelled")


class BulkLineTest(unittest.TestCase):
    def test_from_dict(self):
        line = BulkLine.from_dict({"line": 2, "status": 400, "error": {"code": "c", "message": "m", "field": "f"}})
        self.assertEqual((line.line, line.ok, line.error.code, line.error.field, line.error.status), (2, False, "c", "f", 400))


if __name__ == "__main__":
    unittest.main()
