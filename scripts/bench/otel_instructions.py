#!/usr/bin/env python3
"""Instructions executed (valgrind callgrind `Ir`) by `herald serve` for a
fixed workload, base build against OpenTelemetry build, runs alternating.

Each run: a fresh SQLite store in a temp dir, the server under callgrind
(one core, RUST_LOG=warn, stats sampling off), `herald mock` natively as the
webhook sink. The driver (this script, native) runs the phases below and
asks callgrind to dump its counters after each (`callgrind_control -d`), so
every phase has its own Ir:

  startup   exec to the first 200 from /readyz
  single    N_SINGLE `POST /v1/timers` from CLIENTS keep-alive clients
  bulk      N_BULK timers through `POST /v1/timers:bulk`, BULK_CHUNK per request
  wait      waiting for the common fire time (idle loops, and the engine
            loading the pending timers into its wheel)
  fire      all timers due at one instant -> webhook, until the store says done
  upload    an audience of N_CAMPAIGN recipients (NDJSON)
  campaign  a job to it on the webhook, until the job is done
  quiet     QUIET_S seconds with nothing to do: the idle loops' Ir per second
  shutdown  SIGTERM to exit

Usage: otel_instructions.py OUTDIR BIN_A BIN_B [ROUNDS]   (runs A, B, A, B, ...)
       otel_instructions.py report OUTDIR                  (tables from the runs)
       otel_instructions.py one OUTDIR LABEL BIN MOCK_BIN  (one run, e.g. of a build with symbols)
Sizes from the environment: N_SINGLE (2000), CLIENTS (4), N_BULK (20000),
BULK_CHUNK (5000), N_CAMPAIGN (20000), FIRE_MARGIN_S (28: fire time after
ready), QUIET_S (10); `report` needs the same N_* as the runs.
Writes OUTDIR/results.jsonl (one line per run) and OUTDIR/<run>/cg.out*.
The binaries may be stripped: `report` then splits Ir by object (the
herald binary, libc) and names only libc's functions (malloc, memcpy...).
"""
import collections
import statistics
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

N_SINGLE = int(os.environ.get("N_SINGLE", 2000))
N_BULK = int(os.environ.get("N_BULK", 20000))
BULK_CHUNK = int(os.environ.get("BULK_CHUNK", 5000))
N_CAMPAIGN = int(os.environ.get("N_CAMPAIGN", 20000))
CLIENTS = int(os.environ.get("CLIENTS", 4))
FIRE_MARGIN_S = float(os.environ.get("FIRE_MARGIN_S", 28))
QUIET_S = float(os.environ.get("QUIET_S", 10))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def req(port, method, path, body=None, ctype="application/json", conn=None):
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request(method, path, body=body, headers={"content-type": ctype} if body is not None else {})
    r = c.getresponse()
    data = r.read()
    if conn is None:
        c.close()
    return r.status, data


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int((t % 1) * 1000)


def timer(i, fire_at):
    return json.dumps({"fire_at": fire_at, "channel": "hook", "recipient": "u%d" % i,
                       "message": {"text": "hello", "n": i}}, separators=(",", ":"))


def one_run(outdir, label, binary, mock_bin):
    rdir = os.path.join(outdir, label)
    os.makedirs(rdir)
    sport, mport = free_port(), free_port()
    with open(os.path.join(rdir, "h.toml"), "w") as f:
        f.write(f'''listen = "127.0.0.1:{sport}"
store = "sqlite://{rdir}/herald.db"
node_id = "node-1"
[engine]
stats_interval_ms = 0
[api]
bulk_max_lines = 1000000
bulk_max_bytes = 536870912
[[channels]]
name = "hook"
kind = "webhook"
url = "http://127.0.0.1:{mport}/hook"
concurrency = 64
''')
    mock = subprocess.Popen([mock_bin, "mock", "--listen", f"127.0.0.1:{mport}"],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(rdir, "mock.err"), "w"))
    env = dict(os.environ, RUST_LOG="warn")
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    env.pop("HERALD_ADMIN_KEY", None)
    t0 = time.time()
    srv = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={rdir}/cg.out",
                            binary, "serve", "--config", f"{rdir}/h.toml"], env=env,
                           stdout=open(os.path.join(rdir, "srv.out"), "w"),
                           stderr=open(os.path.join(rdir, "srv.err"), "w"))
    phases = []  # (name, seconds)
    last = [t0]

    def dump(name):
        subprocess.run(["callgrind_control", "-d", name, str(srv.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        now = time.time()
        phases.append((name, now - last[0]))
        last[0] = now

    try:
        while True:
            try:
                if req(sport, "GET", "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            if srv.poll() is not None:
                raise RuntimeError("server exited")
            time.sleep(0.05)
        dump("startup")
        fire_t = time.time() + FIRE_MARGIN_S
        fire_at = rfc3339(fire_t)

        def singles(k):
            c = http.client.HTTPConnection("127.0.0.1", sport, timeout=600)
            for i in range(k, N_SINGLE, CLIENTS):
                st, _ = req(sport, "POST", "/v1/timers", timer(i, fire_at), conn=c)
                assert st == 201, st
            c.close()
        ts = [threading.Thread(target=singles, args=(k,)) for k in range(CLIENTS)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        dump("single")
        for s in range(N_SINGLE, N_SINGLE + N_BULK, BULK_CHUNK):
            body = "\n".join(timer(i, fire_at) for i in range(s, s + BULK_CHUNK)) + "\n"
            st, data = req(sport, "POST", "/v1/timers:bulk", body, "application/x-ndjson")
            assert st == 200 and data.count(b'"status":201') == BULK_CHUNK, (st, data[-300:])
        dump("bulk")
        late = time.time() > fire_t
        while time.time() < fire_t:
            time.sleep(0.01)
        dump("wait")
        total = N_SINGLE + N_BULK
        while json.loads(req(mport, "GET", "/_mock/stats")[1])["unique_delivered"] < total:
            time.sleep(0.1)
        while json.loads(req(sport, "GET", "/v1/stats")[1])["timers"]["done"] < total:
            time.sleep(0.1)
        dump("fire")
        body = "\n".join(json.dumps({"recipient": "c%d" % i}) for i in range(N_CAMPAIGN)) + "\n"
        st, data = req(sport, "POST", "/v1/audiences?name=a", body, "application/x-ndjson")
        assert st in (200, 201), (st, data)
        aud = json.loads(data)["id"]
        dump("upload")
        st, data = req(sport, "POST", "/v1/jobs", json.dumps(
            {"audience_id": aud, "channel": "hook", "message": {"text": "20 off"}, "deadline_secs": 3600}))
        assert st in (200, 201), (st, data)
        job = json.loads(data)["id"]
        while True:
            j = json.loads(req(sport, "GET", f"/v1/jobs/{job}")[1])
            if j["state"] != "running":
                break
            time.sleep(0.25)
        dump("campaign")
        time.sleep(QUIET_S)
        dump("quiet")
        delivered = json.loads(req(mport, "GET", "/_mock/stats")[1])
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=300)
        phases.append(("shutdown", time.time() - last[0]))
    finally:
        if srv.poll() is None:
            srv.kill()
        mock.terminate()
        mock.wait()
        for f in os.listdir(rdir):
            if f.startswith("herald.db"):
                os.remove(os.path.join(rdir, f))
    # cg.out.1 .. cg.out.7 are the dumps in order; cg.out is the rest.
    files = [f"{rdir}/cg.out.{i}" for i in range(1, len(phases))] + [f"{rdir}/cg.out"]
    ir = {}
    for (name, _), path in zip(phases, files):
        with open(path) as f:
            m = re.search(r"^summary: (\d+)", f.read(), re.M)
        ir[name] = int(m.group(1))
    return {"run": label, "binary": binary, "late_start_of_fire": late,
            "seconds": {n: round(s, 2) for n, s in phases}, "ir": ir, "ir_total": sum(ir.values()),
            "job": {k: j["totals"][k] for k in ("total", "sent", "failed")},
            "mock_unique_delivered": delivered["unique_delivered"], "mock_duplicates": delivered["duplicates"]}


PHASES = ["startup", "single", "bulk", "wait", "fire", "upload", "campaign", "quiet", "shutdown"]


def self_cost(path):
    """Self Ir by (object, function) and call counts by (object, function)
    from one callgrind output file (compressed names, one event)."""
    names = {"ob": {}, "fn": {}}
    cur = {"ob": None, "fn": None, "cob": None, "cfn": None}
    skip = False
    cost, calls = collections.Counter(), collections.Counter()
    with open(path) as f:
        for line in f:
            if skip:
                skip = False
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                cost[(cur["ob"], cur["fn"])] += int(line.split()[-1])
                continue
            m = re.match(r"(ob|fn|cob|cfn)=(?:\((\d+)\))?\s*(.*)", line.rstrip("\n"))
            if m:
                kind, idx, name = m.groups()
                key = "ob" if kind in ("ob", "cob") else "fn"
                if idx is not None:
                    if name:
                        names[key][idx] = name
                    else:
                        name = names[key][idx]
                cur[kind] = name
                if kind == "fn":
                    cur["cob"] = None
                continue
            if line.startswith("calls="):
                calls[(cur["cob"] or cur["ob"], cur["cfn"])] += int(line.split("=")[1].split()[0])
                cur["cob"] = None
                skip = True
    return cost, calls


def spread(xs):
    m = statistics.mean(xs)
    return m, (max(xs) - min(xs)) / m if m else 0.0


def report(outdir):
    rows = [json.loads(l) for l in open(os.path.join(outdir, "results.jsonl"))]
    by = {v: [r for r in rows if r["variant"] == v] for v in ("base", "new")}
    n_timers, n_rcpt = N_SINGLE + N_BULK, N_CAMPAIGN

    def metrics(r):
        ir, sec = r["ir"], r["seconds"]
        idle_rate = ir["quiet"] / sec["quiet"]
        m = {"total Ir": r["ir_total"]}
        for p in PHASES:
            m[p] = ir[p]
        m["quiet (idle) Ir/s"] = idle_rate
        m["single Ir/timer"] = ir["single"] / N_SINGLE
        if N_BULK:
            m["bulk Ir/timer"] = ir["bulk"] / N_BULK
        m["fire Ir/timer"] = ir["fire"] / n_timers
        m["timer Ir/timer (single+bulk+fire)"] = (ir["single"] + ir["bulk"] + ir["fire"]) / n_timers
        m["  same, less idle Ir/s x time"] = (
            ir["single"] + ir["bulk"] + ir["fire"] - idle_rate * (sec["single"] + sec["bulk"] + sec["fire"])) / n_timers
        m["campaign Ir/recipient (upload+job)"] = (ir["upload"] + ir["campaign"]) / n_rcpt
        m["  same, less idle Ir/s x time "] = (
            ir["upload"] + ir["campaign"] - idle_rate * (sec["upload"] + sec["campaign"])) / n_rcpt
        return m

    mb = [metrics(r) for r in by["base"]]
    mn = [metrics(r) for r in by["new"]]
    print("| run | " + " | ".join(PHASES) + " | total Ir | s (wall) |")
    print("|---|" + "---:|" * (len(PHASES) + 2))
    for r in rows:
        print(f"| {r['run']} | " + " | ".join(f"{r['ir'][p] / 1e6:,.1f}" for p in PHASES)
              + f" | {r['ir_total'] / 1e6:,.1f} | {sum(r['seconds'].values()):.0f} |")
    print("\n(Ir in millions)\n")
    print("| metric | base mean | base spread | new mean | new spread | new/base | paired ratios |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for k in mb[0]:
        b, bs = spread([m[k] for m in mb])
        n, ns = spread([m[k] for m in mn])
        paired = ", ".join(f"{x[k] / y[k]:.3f}" for x, y in zip(mn, mb))
        print(f"| {k} | {b:,.0f} | {bs:.1%} | {n:,.0f} | {ns:.1%} | {n / b:.4f} | {paired} |")
    # Objects and libc's functions, per phase, summed over the runs.
    print()
    for phase_group in (["single", "bulk", "fire"], ["upload", "campaign"], ["quiet"]):
        agg = {v: collections.Counter() for v in by}
        calls = {v: collections.Counter() for v in by}
        for v, rs in by.items():
            for r in rs:
                rdir = os.path.join(outdir, r["run"])
                for p in phase_group:
                    i = PHASES.index(p) + 1
                    cost, cl = self_cost(f"{rdir}/cg.out.{i}")
                    for (ob, fn), x in cost.items():
                        ob = os.path.basename(ob or "?")
                        ob = "herald" if ob.startswith("herald") else ob
                        agg[v]["[obj] " + ob] += x
                        if not fn.startswith("0x"):
                            agg[v][ob + " " + fn] += x
                    for (ob, fn), x in cl.items():
                        if fn and fn.split("@")[0] in ("malloc", "free", "realloc", "calloc", "__memcpy_avx_unaligned_erms", "epoll_wait", "write", "sendto", "recvfrom", "read", "__lll_lock_wait", "futex_wait", "syscall", "pthread_mutex_lock"):
                            calls[v][fn] += x
        nb, nn = len(by["base"]), len(by["new"])
        print(f"#### {'+'.join(phase_group)}: self Ir by object / named function, mean per run\n")
        print("| where | base | new | new/base |")
        print("|---|---:|---:|---:|")
        keys = sorted(agg["base"], key=lambda k: -agg["base"][k])
        keys = [k for k in keys if k.startswith("[obj]")] + [k for k in keys if not k.startswith("[obj]")][:12]
        for k in keys:
            b, n = agg["base"][k] / nb, agg["new"][k] / nn
            print(f"| {k} | {b / 1e6:,.1f} M | {n / 1e6:,.1f} M | {n / b if b else float('nan'):.4f} |")
        for k in sorted(calls["base"], key=lambda k: -calls["base"][k]):
            b, n = calls["base"][k] / nb, calls["new"][k] / nn
            print(f"| calls to {k} | {b:,.0f} | {n:,.0f} | {n / b if b else float('nan'):.4f} |")
        print()


def main():
    if sys.argv[1] == "report":
        return report(sys.argv[2])
    if sys.argv[1] == "one":  # one run of one binary: one OUTDIR LABEL BIN MOCK_BIN
        outdir, label, binary, mock_bin = sys.argv[2:6]
        os.makedirs(outdir, exist_ok=True)
        return print(json.dumps(one_run(outdir, label, binary, mock_bin)))
    outdir, a, b = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "results.jsonl"), "a") as out:
        for r in range(1, rounds + 1):
            for name, binary in (("base", a), ("new", b)):
                res = one_run(outdir, f"{name}-{r}", binary, a)
                res["variant"], res["round"] = name, r
                print(json.dumps(res), flush=True)
                out.write(json.dumps(res) + "\n")
                out.flush()


if __name__ == "__main__":
    main()
