/**
 * The hand-written layer over openapi-fetch and the types openapi-typescript
 * generates from /openapi.json (src/generated/schema.d.ts). It adds what the
 * generated code lacks:
 *
 * - **Retries that are safe.** A request is sent again after a connection
 *   failure, `408`, `429` or a `5xx`, waiting as `Retry-After` asks (else an
 *   exponential backoff with jitter). Only requests that may be repeated are:
 *   reads, `PUT`s, `DELETE`s, cancels, and creates that carry an idempotency
 *   key; `timers.create` and `timers.bulk` make one for every timer that has
 *   none, so a create whose answer was lost is answered the second time by
 *   the timer the first try made. A create without a key (`jobs.create`,
 *   audience uploads) is sent again only when the server said nothing was
 *   written (`429`, `503 unavailable`, `503 overloaded`) or the connection
 *   was never made.
 * - **Typed errors**: every error answer throws `HeraldError` with `code`,
 *   `message`, `field` and `status`.
 * - **Cursor iteration**: `for await (const t of herald.timers.iterate(...))`.
 * - **NDJSON bulk**: `timers.bulk(...)`, `reminders.bulk(...)`, answered per line.
 *
 * `herald.api` is the openapi-fetch client itself, typed by the generated
 * `paths`, for every other route.
 */
import { randomUUID } from "node:crypto";
import createClient, { type Client } from "openapi-fetch";

import { HeraldConnectionError, HeraldError } from "./errors.js";
import type { components, paths } from "./generated/schema.js";

type S = components["schemas"];
export type Timer = S["TimerJson"];
export type TimerList = S["TimerList"];
export type CreateTimer = S["CreateTimer"];
export type Subject = S["SubjectJson"];
export type SubjectDetail = S["SubjectDetailJson"];
export type SubjectSummary = S["SubjectSummaryJson"];
export type Reminder = S["ReminderJson"];
export type ReminderBody = S["ReminderBody"];
export type UserReminders = S["UserReminders"];
export type RemindersCancelled = S["RemindersCancelled"];
export type Audience = S["AudienceJson"];
export type Job = S["JobJson"];
export type JobBody = S["JobBody"];
export type SendList = S["SendList"];
export type TimerQuery = NonNullable<paths["/v1/timers"]["get"]["parameters"]["query"]>;

export const VERSION = "0.1.0";
const NDJSON = "application/x-ndjson";
/** Codes whose answer says nothing was written: any request may go again. */
const NOTHING_WRITTEN = new Set(["unavailable", "overloaded", "quota_exceeded"]);
/** Statuses worth another try for a request that may be repeated. */
const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);
/** Connection errors raised before anything was sent. */
const NEVER_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT", "EHOSTUNREACH"]);

/** A fresh key for a create (`ts-` and a random UUID; keys must not start with `herald-`). */
export function newIdempotencyKey(): string {
  return `ts-${randomUUID().replaceAll("-", "")}`;
}

function rfc3339(value: Date | string): string {
  return value instanceof Date ? value.toISOString() : value;
}

function ndjson(lines: unknown): string {
  return (lines as unknown[]).map((line) => `${JSON.stringify(line)}\n`).join("");
}

/** One answer line of a bulk request. */
export class BulkLine {
  /** 1-based, of the non-blank input lines. */
  readonly line: number;
  /** What the single route would have answered. */
  readonly status: number;
  /** The error of a refused line, else null. */
  readonly error: HeraldError | null;
  /** The whole line as answered. */
  readonly data: Record<string, unknown>;

  constructor(data: Record<string, unknown>) {
    this.data = data;
    this.line = Number(data.line ?? 0);
    this.status = Number(data.status ?? 0);
    this.error = data.error !== undefined && data.error !== null
      ? HeraldError.fromErrorObject(this.status, data.error, { body: data })
      : null;
  }

  get ok(): boolean {
    return this.error === null && this.status >= 200 && this.status < 300;
  }

  /** The id of the timer made or found (timer lines). */
  get id(): number | null {
    return typeof this.data.id === "number" ? this.data.id : null;
  }
}

export interface HeraldOptions {
  /** Default http://127.0.0.1:8780. */
  baseUrl?: string;
  /** An API key (`Authorization: Bearer`); none in open mode. */
  key?: string;
  /** The tenant the admin key acts for (`X-Herald-Tenant`). */
  tenant?: string;
  /** Per attempt (default 30,000). */
  timeoutMs?: number;
  /** Times a failed request may be sent again (default 4). */
  retries?: number;
  /** First wait without `Retry-After`, doubled each time (default 200). */
  backoffMs?: number;
  /** Longest such wait (default 10,000). */
  maxBackoffMs?: number;
  /** A fetch to use instead of the global one. */
  fetch?: typeof globalThis.fetch;
  /** How to wait between tries (tests replace it). */
  sleep?: (ms: number) => Promise<void>;
}

type Answer = { data?: unknown; error?: unknown; response: Response };

export class Herald {
  /** The openapi-fetch client, typed by the generated `paths`. */
  readonly api: Client<paths>;
  readonly timers: Timers;
  readonly subjects: Subjects;
  readonly reminders: Reminders;
  readonly audiences: Audiences;
  readonly jobs: Jobs;
  readonly retries: number;
  private readonly timeoutMs: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(options: HeraldOptions = {}) {
    const headers: Record<string, string> = { "User-Agent": `herald-client-typescript/${VERSION}` };
    if (options.key) headers.Authorization = `Bearer ${options.key}`;
    if (options.tenant) headers["X-Herald-Tenant"] = options.tenant;
    this.api = createClient<paths>({
      baseUrl: (options.baseUrl ?? "http://127.0.0.1:8780").replace(/\/+$/, ""),
      headers,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    this.retries = options.retries ?? 4;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.backoffMs = options.backoffMs ?? 200;
    this.maxBackoffMs = options.maxBackoffMs ?? 10_000;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.timers = new Timers(this);
    this.subjects = new Subjects(this);
    this.reminders = new Reminders(this);
    this.audiences = new Audiences(this);
    this.jobs = new Jobs(this);
  }

  /**
   * Runs `call` (one openapi-fetch request; pass it the signal), again when
   * that is safe, and returns the data of the first answer under 400;
   * throws `HeraldError` (or `HeraldConnectionError`) otherwise.
   */
  async send<T>(call: (signal: AbortSignal) => Promise<Answer>, idempotent: boolean): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      let answer: Answer;
      try {
        answer = await call(AbortSignal.timeout(this.timeoutMs));
      } catch (err) {
        const failure = connectionFailure(err);
        if (failure === null) throw err;
        if (attempt > this.retries || !(idempotent || failure.neverSent)) {
          throw new HeraldConnectionError(failure.message, { attempts: attempt, cause: err });
        }
        await this.sleep(this.backoff(attempt));
        continue;
      }
      if (answer.response.status < 400) return answer.data as T;
      const error = HeraldError.fromResponse(answer.response, answer.error, attempt);
      if (attempt > this.retries || !retryable(error, idempotent)) throw error;
      let wait = this.backoff(attempt);
      if (error.retryAfterS !== null) wait = Math.max(wait, Math.min(error.retryAfterS, 60) * 1000);
      await this.sleep(wait);
    }
  }

  private backoff(attempt: number): number {
    const ceiling = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** (attempt - 1));
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }

  /** POSTs `lines` as NDJSON to a `:bulk` route; one `BulkLine` per answer line. */
  async bulk(path: "/v1/timers:bulk" | "/v1/reminders:bulk", lines: unknown[], idempotent: boolean): Promise<BulkLine[]> {
    const text = await this.send<string>(
      (signal) =>
        this.api.POST(path, {
          // The generated type is that of one line; the body is all of them.
          body: lines as never,
          bodySerializer: ndjson,
          headers: { "Content-Type": NDJSON },
          parseAs: "text",
          signal,
        }),
      idempotent,
    );
    return text
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => new BulkLine(JSON.parse(l) as Record<string, unknown>));
  }
}

function retryable(error: HeraldError, idempotent: boolean): boolean {
  if (error.status === 429 || (error.status === 503 && NOTHING_WRITTEN.has(error.code))) return true;
  return idempotent && RETRY_STATUSES.has(error.status);
}

function connectionFailure(err: unknown): { message: string; neverSent: boolean } | null {
  if (!(err instanceof Error)) return null;
  if (err.name === "TimeoutError" || err.name === "AbortError") {
    return { message: `no answer in time: ${err.message}`, neverSent: false };
  }
  if (err instanceof TypeError && err.message === "fetch failed") {
    const cause = err.cause as { code?: string; message?: string } | undefined;
    const code = cause?.code ?? "";
    return { message: `fetch failed: ${cause?.message ?? code}`, neverSent: NEVER_SENT.has(code) };
  }
  return null;
}

/** Fields of `POST /v1/timers` with times as `Date` or RFC 3339. */
export type TimerInput = Omit<CreateTimer, "fire_at"> & { fire_at?: Date | string | null };

class Timers {
  constructor(private readonly h: Herald) {}

  /** The body of one timer as `create` and `bulk` send it: an idempotency key made when missing. */
  static body(input: TimerInput): CreateTimer {
    const body: CreateTimer = { ...input, fire_at: input.fire_at == null ? input.fire_at : rfc3339(input.fire_at) };
    if (body.fire_at === undefined) delete body.fire_at;
    if (!body.idempotency_key) body.idempotency_key = newIdempotencyKey();
    return body;
  }

  /** Schedules a timer; without an `idempotency_key` one is made, so a retry finds the same timer. */
  create(input: TimerInput): Promise<Timer> {
    const body = Timers.body(input);
    return this.h.send<Timer>((signal) => this.h.api.POST("/v1/timers", { body, signal }), true);
  }

  get(id: number): Promise<Timer> {
    return this.h.send<Timer>((signal) => this.h.api.GET("/v1/timers/{id}", { params: { path: { id } }, signal }), true);
  }

  /** One page of `GET /v1/timers`. */
  list(query: TimerQuery = {}): Promise<TimerList> {
    return this.h.send<TimerList>((signal) => this.h.api.GET("/v1/timers", { params: { query }, signal }), true);
  }

  /** Every timer the filters select, page after page (`next_cursor`). */
  async *iterate(query: Omit<TimerQuery, "limit"> = {}, pageSize = 100): AsyncGenerator<Timer> {
    let cursor = query.cursor;
    for (;;) {
      const page = await this.list({ ...query, cursor, limit: pageSize });
      yield* page.timers;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  /** Cancels a pending timer; sent again after a lost answer, a timer found cancelled is the answer. */
  async cancel(id: number): Promise<Timer> {
    try {
      return await this.h.send<Timer>(
        (signal) => this.h.api.DELETE("/v1/timers/{id}", { params: { path: { id } }, signal }),
        true,
      );
    } catch (err) {
      if (err instanceof HeraldError && err.code === "not_cancellable" && err.attempts > 1) {
        const timer = await this.get(id);
        if (timer.state === "cancelled") return timer;
      }
      throw err;
    }
  }

  /** `POST /v1/timers:bulk`, each timer given a key when it has none; one `BulkLine` per timer. */
  bulk(timers: Iterable<TimerInput>): Promise<BulkLine[]> {
    return this.h.bulk("/v1/timers:bulk", [...timers].map((t) => Timers.body(t)), true);
  }
}

class Subjects {
  constructor(private readonly h: Herald) {}

  put(subjectId: string, body: { start_at: Date | string; title?: string | null; data?: Record<string, unknown> | null }): Promise<Subject> {
    const json: S["SubjectBody"] = { ...body, start_at: rfc3339(body.start_at) };
    return this.h.send<Subject>(
      (signal) =>
        this.h.api.PUT("/v1/subjects/{subject_id}", { params: { path: { subject_id: subjectId } }, body: json, signal }),
      true,
    );
  }

  get(subjectId: string): Promise<SubjectDetail> {
    return this.h.send<SubjectDetail>(
      (signal) => this.h.api.GET("/v1/subjects/{subject_id}", { params: { path: { subject_id: subjectId } }, signal }),
      true,
    );
  }

  delete(subjectId: string): Promise<Subject> {
    return this.h.send<Subject>(
      (signal) => this.h.api.DELETE("/v1/subjects/{subject_id}", { params: { path: { subject_id: subjectId } }, signal }),
      true,
    );
  }

  async *iterate(pageSize = 50): AsyncGenerator<SubjectSummary> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.h.send<S["SubjectList"]>(
        (signal) => this.h.api.GET("/v1/subjects", { params: { query: { cursor, limit: pageSize } }, signal }),
        true,
      );
      yield* page.subjects;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }
}

class Reminders {
  constructor(private readonly h: Herald) {}

  /**
   * Subscribes a user to a subject. A subscription is its own key: when the
   * first answer was lost and the retry is told `409 reminder_exists`, the
   * reminder the first try made is read back and returned.
   */
  async create(body: ReminderBody): Promise<Reminder> {
    try {
      return await this.h.send<Reminder>((signal) => this.h.api.POST("/v1/reminders", { body, signal }), true);
    } catch (err) {
      if (err instanceof HeraldError && err.code === "reminder_exists" && err.attempts > 1) {
        const found = await this.find(body);
        if (found) return found;
      }
      throw err;
    }
  }

  private async find(body: ReminderBody): Promise<Reminder | null> {
    const mine = await this.ofUser(body.user_id);
    for (const subject of mine.subjects) {
      if (subject.subject_id !== body.subject_id) continue;
      for (const slot of subject.reminders) {
        if (slot.channel_type === body.channel_type && slot.lead_minutes === body.lead_minutes) {
          return {
            user_id: body.user_id,
            subject_id: body.subject_id,
            channel_type: slot.channel_type,
            lead_minutes: slot.lead_minutes,
            timer_id: slot.timer_id,
            fire_at: slot.fire_at,
            channel: slot.channel,
            state: slot.state,
            // The listing does not carry it; the first try asked for this.
            send_late: body.send_late ?? false,
            priority: body.priority ?? 5,
          };
        }
      }
    }
    return null;
  }

  ofUser(userId: string): Promise<UserReminders> {
    return this.h.send<UserReminders>(
      (signal) => this.h.api.GET("/v1/users/{user_id}/reminders", { params: { path: { user_id: userId } }, signal }),
      true,
    );
  }

  delete(
    userId: string,
    subjectId: string,
    which: NonNullable<paths["/v1/reminders/{user_id}/{subject_id}"]["delete"]["parameters"]["query"]> = {},
  ): Promise<RemindersCancelled> {
    return this.h.send<RemindersCancelled>(
      (signal) =>
        this.h.api.DELETE("/v1/reminders/{user_id}/{subject_id}", {
          params: { path: { user_id: userId, subject_id: subjectId }, query: which },
          signal,
        }),
      true,
    );
  }

  /** `POST /v1/reminders:bulk`; sent again after a lost answer, lines already made answer `409 reminder_exists`. */
  bulk(reminders: Iterable<ReminderBody>): Promise<BulkLine[]> {
    return this.h.bulk("/v1/reminders:bulk", [...reminders], true);
  }
}

class Audiences {
  constructor(private readonly h: Herald) {}

  /** Uploads the recipients as NDJSON; returns the sealed audience. Not repeated unless nothing was written. */
  create(recipients: Iterable<string>, name?: string): Promise<Audience> {
    const lines = [...recipients].map((recipient) => ({ recipient }));
    return this.h.send<Audience>(
      (signal) =>
        this.h.api.POST("/v1/audiences", {
          params: { query: name === undefined ? {} : { name } },
          body: lines as never,
          bodySerializer: ndjson,
          headers: { "Content-Type": NDJSON },
          signal,
        }),
      false,
    );
  }

  get(id: number): Promise<Audience> {
    return this.h.send<Audience>((signal) => this.h.api.GET("/v1/audiences/{id}", { params: { path: { id } }, signal }), true);
  }
}

class Jobs {
  constructor(private readonly h: Herald) {}

  /**
   * Starts a job. The API has no idempotency key for jobs, so this is sent
   * again only when the server answered that nothing was written.
   */
  create(body: Omit<JobBody, "deadline"> & { deadline?: Date | string | null }): Promise<Job> {
    const json: JobBody = { ...body, deadline: body.deadline == null ? body.deadline : rfc3339(body.deadline) };
    if (json.deadline === undefined) delete json.deadline;
    return this.h.send<Job>((signal) => this.h.api.POST("/v1/jobs", { body: json, signal }), false);
  }

  get(id: number): Promise<Job> {
    return this.h.send<Job>((signal) => this.h.api.GET("/v1/jobs/{id}", { params: { path: { id } }, signal }), true);
  }

  /** `POST /v1/jobs/{id}:cancel`; a job already ended is answered as it is. */
  cancel(id: number): Promise<Job> {
    return this.h.send<Job>((signal) => this.h.api.POST("/v1/jobs/{id}:cancel", { params: { path: { id } }, signal }), true);
  }

  /**
   * Every job, newest first (`next_before`); with `category`, only that
   * category's, with `name`, only names starting with it.
   */
  async *iterate(pageSize = 50, filter: { category?: string; name?: string } = {}): AsyncGenerator<Job> {
    let before: number | undefined;
    for (;;) {
      const page = await this.h.send<S["JobList"]>(
        (signal) => this.h.api.GET("/v1/jobs", { params: { query: { before, limit: pageSize, ...filter } }, signal }),
        true,
      );
      yield* page.jobs;
      if (page.next_before === null || page.next_before === undefined) return;
      before = page.next_before;
    }
  }

  sends(id: number, start = 0, end?: number): Promise<SendList> {
    return this.h.send<SendList>(
      (signal) => this.h.api.GET("/v1/jobs/{id}/sends", { params: { path: { id }, query: { start, end } }, signal }),
      true,
    );
  }

  /** Polls the job until it is no longer `running`; throws after `timeoutMs`. */
  async wait(id: number, timeoutMs = 60_000, pollMs = 200): Promise<Job> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const job = await this.get(id);
      if (job.state !== "running") return job;
      if (Date.now() >= deadline) throw new Error(`job ${id} still running after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }
}
