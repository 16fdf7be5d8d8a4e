/**
 * verifyWebhook: unit cases, then every case of the fixtures made from
 * signatures of the real binary (clients/webhook-fixtures).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";

import { verifyWebhook, WebhookVerificationError, type VerifyOptions, type WebhookFailure } from "../src/index.js";
import { heraldBinary, REPO } from "./support.js";

const SECRET = "s3cret";
const BODY = Buffer.from('{"id":1,"kind":"timer","message":{"text":"hé"}}', "utf8");
const T = 1_800_000_000;

const sign = (secret: string, t: number, body: Buffer) =>
  createHmac("sha256", secret).update(`${t}.`).update(body).digest("hex");

function reason(
  header: string | null | undefined,
  { body = BODY, secret = SECRET, ...options }: VerifyOptions & { body?: Buffer; secret?: string } = {},
): WebhookFailure {
  try {
    verifyWebhook(secret, header, body, { now: T, ...options });
  } catch (err) {
    assert.ok(err instanceof WebhookVerificationError, String(err));
    return err.reason;
  }
  assert.fail("accepted");
}

describe("verifyWebhook", () => {
  test("accepts a right signature", () => {
    const header = `t=${T},v1=${sign(SECRET, T, BODY)}`;
    assert.equal(verifyWebhook(SECRET, header, BODY, { now: T }), T);
    assert.equal(verifyWebhook(Buffer.from(SECRET), header, BODY.toString("utf8"), { now: T + 300 }), T);
    assert.equal(verifyWebhook(SECRET, header, new Uint8Array(BODY), { now: T - 300 }), T);
  });

  test("uses the clock without now", () => {
    const t = Math.floor(Date.now() / 1000);
    assert.equal(verifyWebhook(SECRET, `t=${t},v1=${sign(SECRET, t, BODY)}`, BODY), t);
    assert.equal(reason(`t=${t - 301},v1=${sign(SECRET, t - 301, BODY)}`, { now: undefined }), "stale");
  });

  test("refusals name their reason", () => {
    const good = sign(SECRET, T, BODY);
    assert.equal(reason(null), "missing");
    assert.equal(reason(""), "missing");
    assert.equal(reason(`v1=${good}`), "malformed");
    assert.equal(reason(`t=${T}`), "malformed");
    assert.equal(reason(`t=-${T},v1=${good}`), "malformed");
    assert.equal(reason(`t=${T},v1=${good.slice(0, -2)}`), "malformed");
    assert.equal(reason(`t=${T},v1=${good}`, { now: T + 301 }), "stale");
    assert.equal(reason(`t=${T},v1=${good}`, { now: T - 301 }), "stale");
    assert.equal(reason(`t=${T},v1=${good}`, { now: T + 11, toleranceS: 10 }), "stale");
    assert.equal(reason(`t=${T},v1=${good}`, { secret: "other" }), "mismatch");
    assert.equal(reason(`t=${T},v1=${good}`, { body: Buffer.concat([BODY, Buffer.from(" ")]) }), "mismatch");
    assert.equal(reason(`t=${T + 1},v1=${good}`), "mismatch");
  });

  test("any v1 may match", () => {
    const good = sign(SECRET, T, BODY);
    const bad = sign("old", T, BODY);
    assert.equal(verifyWebhook(SECRET, `t=${T},v1=${bad},v1=${good}`, BODY, { now: T }), T);
    assert.equal(verifyWebhook(SECRET, ` v1=${good.toUpperCase()} , t=${T} `, BODY, { now: T }), T);
    assert.equal(reason(`t=${T},v1=${bad},v1=${bad}`), "mismatch");
  });
});

interface Fixtures {
  secret: string;
  tolerance_s: number;
  cases: { name: string; header: string; body: string; now: number; valid: boolean; reason?: WebhookFailure | null }[];
}

/** HERALD_WEBHOOK_FIXTURES, or made here by capture.py with the test binary; null when neither can be had. */
function loadFixtures(): Fixtures | null {
  let path = process.env.HERALD_WEBHOOK_FIXTURES;
  if (!path) {
    const capture = join(REPO, "clients", "webhook-fixtures", "capture.py");
    let binary: string;
    try {
      binary = heraldBinary();
    } catch {
      return null;
    }
    if (!existsSync(capture)) return null;
    path = join(mkdtempSync(join(tmpdir(), "herald-fixtures-ts-")), "fixtures.json");
    execFileSync("python3", [capture, "--herald", binary, "--out", path], { stdio: "inherit" });
  }
  return JSON.parse(readFileSync(path, "utf8")) as Fixtures;
}

test("every case of the fixtures from the real binary", (t) => {
  const fixtures = loadFixtures();
  if (fixtures === null) {
    assert.notEqual(process.env.HERALD_REQUIRE_FIXTURES, "1", "no webhook fixtures: set HERALD_WEBHOOK_FIXTURES or HERALD_BIN");
    t.skip("no webhook fixtures (HERALD_WEBHOOK_FIXTURES or HERALD_BIN)");
    return;
  }
  assert.ok(fixtures.cases.some((c) => c.valid) && fixtures.cases.some((c) => !c.valid));
  const wrong: string[] = [];
  for (const c of fixtures.cases) {
    const options = { toleranceS: fixtures.tolerance_s, now: c.now };
    const body = Buffer.from(c.body, "utf8");
    try {
      const signed = verifyWebhook(fixtures.secret, c.header, body, options);
      if (!c.valid) wrong.push(`${c.name}: accepted (t=${signed}), want ${c.reason}`);
    } catch (err) {
      assert.ok(err instanceof WebhookVerificationError, String(err));
      if (c.valid) wrong.push(`${c.name}: refused (${err.message})`);
      else if (c.reason && err.reason !== c.reason) wrong.push(`${c.name}: ${err.reason}, want ${c.reason}`);
    }
  }
  assert.deepEqual(wrong, []);
});
