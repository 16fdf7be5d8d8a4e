/**
 * The TypeScript client against a real `herald serve` (HERALD_BIN, else
 * target/debug/herald), over HTTP: every test calls the node and checks what
 * it answered.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import { BulkLine, Herald, HeraldConnectionError, HeraldError, type Timer } from "../src/index.js";
import { FaultProxy, startNode, type Node } from "./support.js";

const unique = (prefix: string) => `${prefix}-${randomUUID().slice(0, 10)}`;
const inHours = (h: number) => new Date(Date.now() + h * 3_600_000);
const wholeSeconds = (d: Date) => new Date(Math.floor(d.getTime() / 1000) * 1000);

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

async function rejects(promise: Promise<unknown>): Promise<HeraldError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof HeraldError, `not a HeraldError: ${err}`);
    return err;
  }
  assert.fail("the call succeeded");
}

describe("Herald client against the real binary", () => {
  let node: Node;
  let proxy: FaultProxy;
  let herald: Herald;
  let sleeps: number[];

  before(async () => {
    node = await startNode();
    proxy = await new FaultProxy(node.url).start();
    herald = new Herald({ baseUrl: node.url });
  });

  after(async () => {
    await proxy.stop();
    await node.stop();
  });

  /** A client through the fault proxy that records its waits. */
  function viaProxy(retries = 4): Herald {
    sleeps = [];
    return new Herald({
      baseUrl: proxy.url,
      retries,
      sleep: (ms) => {
        sleeps.push(ms);
        return new Promise((ok) => setTimeout(ok, ms));
      },
    });
  }

  // Timers.

  test("create, then get", async () => {
    const fireAt = wholeSeconds(inHours(1));
    const key = unique("order");
    const timer = await herald.timers.create({
      channel: "log", recipient: "order-1001", fire_at: fireAt, message: { stars: 5 }, priority: 7, idempotency_key: key,
    });
    assert.equal(timer.state, "pending");
    assert.equal(timer.kind, "timer");
    assert.equal(timer.priority, 7);
    assert.equal(timer.idempotency_key, key);
    assert.equal(new Date(timer.due_at).getTime(), fireAt.getTime());

    const got = await herald.timers.get(timer.id);
    assert.equal(got.id, timer.id);
    assert.equal(got.recipient, "order-1001");
    assert.deepEqual(got.message, { stars: 5 });

    // The same key again: the same timer, nothing new.
    const again = await herald.timers.create({ channel: "log", recipient: "x", delay_ms: 5, message: {}, idempotency_key: key });
    assert.equal(again.id, timer.id);
    assert.equal(again.recipient, "order-1001");
  });

  test("create makes an idempotency key", async () => {
    const timer = await herald.timers.create({ channel: "log", recipient: "u1", delay_ms: 3_600_000, message: {} });
    assert.match(timer.idempotency_key ?? "", /^ts-[0-9a-f]{32}$/);
  });

  test("a timer fires and is delivered (a route through herald.api)", async () => {
    const timer = await herald.timers.create({ channel: "log", recipient: "u1", delay_ms: 0, message: { now: true } });
    const deadline = Date.now() + 15_000;
    while ((await herald.timers.get(timer.id)).state !== "done") {
      assert.ok(Date.now() < deadline, "the timer was not delivered in 15 s");
      await new Promise((ok) => setTimeout(ok, 100));
    }
    const { data, error } = await herald.api.GET("/v1/timers/{id}/deliveries", { params: { path: { id: timer.id } } });
    assert.equal(error, undefined);
    assert.deepEqual(data!.deliveries.map((d) => d.outcome), ["delivered"]);
  });

  test("list follows the cursor over pages", async () => {
    const recipient = unique("pages");
    const base = inHours(2).getTime();
    const made: number[] = [];
    for (let i = 0; i < 7; i++) {
      const t = await herald.timers.create({ channel: "log", recipient, fire_at: new Date(base + i * 60_000), message: { i } });
      made.push(t.id);
    }
    const first = await herald.timers.list({ recipient, limit: 3 });
    assert.deepEqual(first.timers.map((t) => t.id), made.slice(0, 3));
    assert.equal(typeof first.next_cursor, "string");

    const pages: number[] = [];
    const list = herald.timers.list.bind(herald.timers);
    herald.timers.list = async (q) => {
      const page = await list(q);
      pages.push(page.timers.length);
      return page;
    };
    try {
      const seen = await collect(herald.timers.iterate({ recipient }, 3));
      assert.deepEqual(seen.map((t) => t.id), made);
      assert.deepEqual(pages, [3, 3, 1]);
    } finally {
      herald.timers.list = list;
    }
    const newestFirst = await collect(herald.timers.iterate({ recipient, order: "desc" }, 2));
    assert.deepEqual(newestFirst.map((t) => t.id), [...made].reverse());
  });

  test("cancel", async () => {
    const timer = await herald.timers.create({ channel: "log", recipient: "u1", delay_ms: 3_600_000, message: {} });
    const cancelled = await herald.timers.cancel(timer.id);
    assert.equal(cancelled.id, timer.id);
    assert.equal(cancelled.state, "cancelled");
    assert.equal((await herald.timers.get(timer.id)).state, "cancelled");
    const err = await rejects(herald.timers.cancel(timer.id));
    assert.deepEqual([err.status, err.code], [409, "not_cancellable"]);
  });

  test("bulk answers each line", async () => {
    const key = unique("bulk");
    const lines = [
      { channel: "log", recipient: "a", delay_ms: 3_600_000, message: { n: 1 }, idempotency_key: key },
      { channel: "nope", recipient: "b", delay_ms: 1000, message: {} },
      { channel: "log", recipient: "c", fire_at: inHours(1), message: { n: 3 } },
    ];
    const answers = await herald.timers.bulk(lines);
    assert.deepEqual(answers.map((a) => a.line), [1, 2, 3]);
    assert.deepEqual(answers.map((a) => a.status), [201, 400, 201]);
    assert.deepEqual(answers.map((a) => a.ok), [true, false, true]);
    assert.deepEqual([answers[1].error?.code, answers[1].error?.field], ["unknown_channel", "channel"]);
    assert.equal(answers[1].id, null);
    assert.equal((await herald.timers.get(answers[0].id!)).idempotency_key, key);
    assert.equal((await herald.timers.get(answers[2].id!)).recipient, "c");

    // Sent again with the same key, the line finds its timer.
    const again = await herald.timers.bulk([lines[0]]);
    assert.deepEqual([again[0].status, again[0].id], [200, answers[0].id]);
  });

  // Reminders.

  test("subject and reminder", async () => {
    const subject = unique("coupon");
    const start = wholeSeconds(inHours(2));
    const made = await herald.subjects.put(subject, { start_at: start, title: "Coupon opens", data: { sku: 42 } });
    assert.equal(made.subject_id, subject);

    const reminder = await herald.reminders.create({ user_id: "alice", subject_id: subject, channel_type: "app", lead_minutes: 5 });
    assert.equal(reminder.state, "pending");
    assert.equal(reminder.channel, "log");
    assert.equal(new Date(reminder.fire_at).getTime(), start.getTime() - 5 * 60_000);
    assert.equal((await herald.timers.get(reminder.timer_id)).kind, "reminder");

    const detail = await herald.subjects.get(subject);
    assert.deepEqual([detail.subscribers, detail.reminders], [1, 1]);
    const mine = await herald.reminders.ofUser("alice");
    assert.ok(mine.subjects.some((s) => s.subject_id === subject));

    let err = await rejects(herald.reminders.create({ user_id: "alice", subject_id: subject, channel_type: "app", lead_minutes: 5 }));
    assert.deepEqual([err.status, err.code], [409, "reminder_exists"]);
    err = await rejects(herald.reminders.create({ user_id: "alice", subject_id: subject, channel_type: "app", lead_minutes: 7 }));
    assert.deepEqual([err.status, err.field], [400, "lead_minutes"]);

    // Moving the subject moves the reminder.
    const moved = await herald.subjects.put(subject, { start_at: new Date(start.getTime() + 3_600_000) });
    assert.equal(moved.moved_reminders, 1);
    const timer = await herald.timers.get(reminder.timer_id);
    assert.equal(new Date(timer.due_at).getTime(), start.getTime() + 55 * 60_000);

    const cleared = await herald.reminders.delete("alice", subject, { channel_type: "app" });
    assert.deepEqual(cleared.cancelled_timers, [reminder.timer_id]);
    assert.equal((await herald.timers.get(reminder.timer_id)).state, "cancelled");
  });

  test("reminders bulk and the subject listing", async () => {
    const subjects = [unique("launch"), unique("launch"), unique("launch")].sort();
    for (const s of subjects) await herald.subjects.put(s, { start_at: inHours(3) });
    const answers = await herald.reminders.bulk([
      { user_id: "bob", subject_id: subjects[0], channel_type: "email", lead_minutes: 10 },
      { user_id: "bob", subject_id: "no-such-subject", channel_type: "email", lead_minutes: 10 },
    ]);
    assert.deepEqual(answers.map((a) => a.status), [201, 404]);
    assert.equal(answers[1].error?.code, "subject_not_found");
    const listed = (await collect(herald.subjects.iterate(1))).map((s) => s.subject_id);
    for (const s of subjects) assert.ok(listed.includes(s), s);
    assert.deepEqual(listed, [...listed].sort());
  });

  // Jobs.

  test("a job to an audience", async () => {
    const audience = await herald.audiences.create(["u1", "u2", "u3", "u2"], unique("followers"));
    assert.deepEqual([audience.size, audience.duplicates_removed], [3, 1]);
    const job = await herald.jobs.create({ audience_id: audience.id, channel: "log", message: { text: "20 off today" }, deadline_secs: 3600 });
    assert.equal(job.audience_id, audience.id);
    const done = await herald.jobs.wait(job.id, 30_000);
    assert.equal(done.state, "done");
    assert.deepEqual([done.totals.total, done.totals.sent, done.totals.failed], [3, 3, 0]);
    const { sends } = await herald.jobs.sends(job.id, 0, 3);
    assert.deepEqual(sends.map((s) => s.recipient), ["u1", "u2", "u3"]);
    assert.deepEqual([...new Set(sends.map((s) => s.state))], ["delivered"]);
    // Cancelling a job that ended answers it as it is.
    assert.equal((await herald.jobs.cancel(job.id)).state, "done");
    assert.ok((await collect(herald.jobs.iterate(1))).some((j) => j.id === job.id));
  });

  test("a job to users listed inline", async () => {
    const job = await herald.jobs.create({ users: ["a", "b"], channel: "log", message: { x: 1 } });
    assert.equal((await herald.jobs.wait(job.id, 30_000)).totals.sent, 2);
  });

  // Errors.

  test("errors carry code, field and status", async () => {
    let err = await rejects(herald.timers.create({ channel: "log", recipient: "u1", delay_ms: 1000, message: {}, priority: 12 }));
    assert.deepEqual([err.status, err.code, err.field], [400, "invalid_field", "priority"]);
    assert.match(err.detail, /priority/);

    err = await rejects(herald.timers.get(987654321));
    assert.deepEqual([err.status, err.code, err.field], [404, "not_found", null]);

    err = await rejects(herald.timers.create({ channel: "log", recipient: "u1", delay_ms: 1, message: {}, idempotency_key: "herald-x" }));
    assert.deepEqual([err.code, err.field], ["invalid_field", "idempotency_key"]);

    err = await rejects(herald.jobs.create({ channel: "log", message: {} }));
    assert.equal(err.status, 400);
  });

  test("no server", async () => {
    const waits: number[] = [];
    const nowhere = new Herald({ baseUrl: "http://127.0.0.1:9", retries: 1, sleep: async (ms) => void waits.push(ms) });
    const err = await rejects(nowhere.timers.get(1));
    assert.ok(err instanceof HeraldConnectionError);
    assert.deepEqual([err.code, err.attempts], ["connection_error", 2]);
    assert.equal(waits.length, 1);
  });

  // Retries, with the fault proxy in front of the node.

  test("a lost answer to a create is retried with the same key", async () => {
    const client = viaProxy();
    const recipient = unique("lost");
    proxy.fail("POST", "/v1/timers", "lose_answer");
    const before = proxy.count("POST", "/v1/timers");
    const timer = await client.timers.create({ channel: "log", recipient, delay_ms: 3_600_000, message: {} });
    assert.equal(proxy.count("POST", "/v1/timers") - before, 2);
    // Both tries reached Herald; one timer exists, the one answered.
    const stored: Timer[] = await collect(herald.timers.iterate({ recipient }));
    assert.deepEqual(stored.map((t) => t.id), [timer.id]);
  });

  test("a lost answer to a bulk is retried without duplicates", async () => {
    const client = viaProxy();
    const recipient = unique("lostbulk");
    proxy.fail("POST", "/v1/timers:bulk", "lose_answer");
    const answers = await client.timers.bulk(
      [0, 1, 2].map((n) => ({ channel: "log", recipient, delay_ms: 3_600_000, message: { n } })),
    );
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200]);
    const stored = (await collect(herald.timers.iterate({ recipient }))).map((t) => t.id).sort();
    assert.deepEqual(stored, answers.map((a) => a.id!).sort());
  });

  test("unavailable waits as Retry-After asks", async () => {
    const client = viaProxy();
    proxy.fail("POST", "/v1/timers", "unavailable");
    proxy.fail("POST", "/v1/timers", "unavailable");
    const started = Date.now();
    const timer = await client.timers.create({ channel: "log", recipient: "u1", delay_ms: 3_600_000, message: {} });
    assert.ok(Date.now() - started >= 2000, `${Date.now() - started} ms`);
    assert.equal(sleeps.length, 2);
    assert.ok(sleeps.every((ms) => ms >= 1000), String(sleeps));
    assert.equal((await herald.timers.get(timer.id)).state, "pending");
  });

  test("retries give up", async () => {
    const client = viaProxy(1);
    proxy.fail("GET", "/v1/timers/1", "unavailable");
    proxy.fail("GET", "/v1/timers/1", "unavailable");
    const err = await rejects(client.timers.get(1));
    assert.deepEqual([err.status, err.code, err.attempts, err.retryAfterS], [503, "unavailable", 2, 1]);
  });

  test("a create without a key is not sent twice", async () => {
    const client = viaProxy();
    const marker = unique("job");
    const before = new Set((await collect(herald.jobs.iterate())).map((j) => j.id));
    proxy.fail("POST", "/v1/jobs", "lose_answer");
    const count = proxy.count("POST", "/v1/jobs");
    const err = await rejects(client.jobs.create({ users: ["a"], channel: "log", message: { m: marker } }));
    assert.ok(err instanceof HeraldConnectionError);
    assert.equal(proxy.count("POST", "/v1/jobs") - count, 1);
    const fresh = (await collect(herald.jobs.iterate())).filter((j) => !before.has(j.id));
    assert.deepEqual(fresh.map((j) => j.message), [{ m: marker }]);
  });

  test("a lost answer to a reminder reads it back", async () => {
    const client = viaProxy();
    const subject = unique("sale");
    await herald.subjects.put(subject, { start_at: inHours(2) });
    proxy.fail("POST", "/v1/reminders", "lose_answer");
    const reminder = await client.reminders.create({ user_id: "carol", subject_id: subject, channel_type: "sms", lead_minutes: 15 });
    assert.deepEqual([reminder.subject_id, reminder.lead_minutes, reminder.state], [subject, 15, "pending"]);
    assert.equal((await herald.timers.get(reminder.timer_id)).kind, "reminder");
  });

  test("a lost answer to a cancel", async () => {
    const client = viaProxy();
    const timer = await herald.timers.create({ channel: "log", recipient: "u1", delay_ms: 3_600_000, message: {} });
    proxy.fail("DELETE", `/v1/timers/${timer.id}`, "lose_answer");
    assert.equal((await client.timers.cancel(timer.id)).state, "cancelled");
  });
});

test("BulkLine reads an error line", () => {
  const line = new BulkLine({ line: 2, status: 400, error: { code: "c", message: "m", field: "f" } });
  assert.deepEqual([line.line, line.ok, line.error?.code, line.error?.field, line.error?.status], [2, false, "c", "f", 400]);
});
