/**
 * What the tests share: a real `herald serve` on a throwaway store, and a
 * small HTTP proxy in front of it that can lose an answer or answer `503` in
 * Herald's place, to see what the client's retries do.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, mkdtempSync, openSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (this file runs from clients/typescript/dist/test). */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

/** HERALD_BIN, else the debug build of this repository. */
export function heraldBinary(): string {
  const binary = resolve(process.env.HERALD_BIN || join(REPO, "target", "debug", "herald"));
  try {
    accessSync(binary, constants.X_OK);
  } catch {
    throw new Error(`no herald binary at ${binary}: set HERALD_BIN`);
  }
  return binary;
}

export interface Node {
  url: string;
  dir: string;
  stop(): Promise<void>;
}

/** `herald serve` in open mode on 127.0.0.1, a free port, SQLite in a temporary directory. */
export async function startNode(extra = ""): Promise<Node> {
  const dir = mkdtempSync(join(tmpdir(), "herald-client-ts-"));
  const cfg = join(dir, "herald.toml");
  writeFileSync(cfg, `listen = "127.0.0.1:0"\nstore = "sqlite://${dir}/herald.db"\n${extra}`);
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("HERALD_") || k === "HERALD_BIN"),
  );
  const log = openSync(join(dir, "herald.log"), "w");
  const proc: ChildProcess = spawn(heraldBinary(), ["serve", "--config", cfg], {
    cwd: dir,
    env,
    stdio: ["ignore", "pipe", log],
  });
  const url = await new Promise<string>((ok, fail) => {
    let seen = "";
    const timer = setTimeout(() => fail(new Error(`herald did not start; see ${dir}/herald.log`)), 30_000);
    proc.stdout!.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      const m = / listening on (http:\/\/[^/\s]+)/.exec(seen);
      if (m) {
        clearTimeout(timer);
        ok(m[1]);
      }
    });
    proc.on("exit", (code) => {
      clearTimeout(timer);
      fail(new Error(`herald exited (${code}); see ${dir}/herald.log`));
    });
  });
  return {
    url,
    dir,
    stop: () =>
      new Promise<void>((done) => {
        if (proc.exitCode !== null) return done();
        const kill = setTimeout(() => proc.kill("SIGKILL"), 30_000);
        proc.on("exit", () => {
          clearTimeout(kill);
          done();
        });
        proc.kill("SIGTERM");
      }),
  };
}

export type Fault = "lose_answer" | "unavailable";

/**
 * Forwards requests to `upstream`. `fail(method, path, fault)` arms one
 * fault for the next request that matches: `lose_answer` lets the request
 * reach Herald and then closes the connection before its answer is passed
 * on; `unavailable` answers `503 unavailable` with `Retry-After: 1` in
 * Herald's place. `count` tells how many requests went by.
 */
export class FaultProxy {
  url = "";
  private readonly faults: { method: string; path: string; fault: Fault }[] = [];
  private readonly seen = new Map<string, number>();
  private readonly server: http.Server;

  constructor(private readonly upstream: string) {
    this.server = http.createServer((req, res) => this.handle(req, res));
  }

  async start(): Promise<this> {
    await new Promise<void>((ok) => this.server.listen(0, "127.0.0.1", ok));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  fail(method: string, path: string, fault: Fault): void {
    this.faults.push({ method, path, fault });
  }

  count(method: string, path: string): number {
    return this.seen.get(`${method} ${path}`) ?? 0;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((ok) => this.server.close(() => ok()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const path = (req.url ?? "").split("?")[0];
    const key = `${req.method} ${path}`;
    this.seen.set(key, (this.seen.get(key) ?? 0) + 1);
    const at = this.faults.findIndex((f) => f.method === req.method && f.path === path);
    const fault = at >= 0 ? this.faults.splice(at, 1)[0].fault : null;
    if (fault === "unavailable") {
      const data = JSON.stringify({ error: { code: "unavailable", message: "injected by the test proxy" } });
      res.writeHead(503, { "Content-Type": "application/json", "Retry-After": "1" });
      res.end(data);
      return;
    }
    const headers = { ...req.headers };
    delete headers.host;
    delete headers.connection;
    const answer = await new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>(
      (ok, fail) => {
        const out = http.request(`${this.upstream}${req.url}`, { method: req.method, headers }, (up) => {
          const parts: Buffer[] = [];
          up.on("data", (c: Buffer) => parts.push(c));
          up.on("end", () => ok({ status: up.statusCode ?? 502, headers: up.headers, body: Buffer.concat(parts) }));
          up.on("error", fail);
        });
        out.on("error", fail);
        out.end(body);
      },
    );
    if (fault === "lose_answer") {
      req.socket.destroy();
      return;
    }
    const back = { ...answer.headers };
    delete back["transfer-encoding"];
    delete back.connection;
    back["content-length"] = String(answer.body.length);
    res.writeHead(answer.status, back);
    res.end(answer.body);
  }
}
