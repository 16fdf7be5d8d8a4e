/**
 * TypeScript client for Herald's HTTP API.
 *
 *     import { Herald, HeraldError } from "@herald/client";
 *     const herald = new Herald({ baseUrl: "http://127.0.0.1:8780" });
 *     const timer = await herald.timers.create({ channel: "log", recipient: "u1", delay_ms: 5000, message: { text: "hi" } });
 *
 * `Herald` is the hand-written layer (retries with idempotency keys, typed
 * errors, cursor iteration, NDJSON bulk) over openapi-fetch; `paths` and
 * `components` are the types openapi-typescript generates from
 * /openapi.json (`clients/generate.sh`); `verifyWebhook` checks a webhook's
 * signature.
 */
export * from "./client.js";
export * from "./errors.js";
export * from "./webhooks.js";
export type { components, operations, paths } from "./generated/schema.js";
