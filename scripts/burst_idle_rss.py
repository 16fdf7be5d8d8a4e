#!/usr/bin/env python3
"""RSS of an idle `herald serve` (SQLite) after a burst of concurrent uploads.

Starts the given herald binary on a temporary SQLite store, sends N
concurrent `POST /v1/audiences` uploads (CSV, R recipients each; an answer
`503` is retried after its `Retry-After`, as a client would), then leaves
the node idle and samples its VmRSS, thread count and AnonHugePages (the
part of its memory backed by transparent huge pages) every few seconds.
Prints one line per sample and a summary.

    python3 scripts/burst_idle_rss.py target/release/herald --uploads 260 \
        --recipients 10000 --idle 300 --api 'max_inflight_body_bytes = 1073741824'

`--api` lines go under `[api]` in the server's configuration (repeat it for
several settings).
"""
import argparse, http.client, os, sys, threading, time

from herald_proc import start_serve, status_kib, stop as stop_serve


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def anon_huge_kib(pid):
    total = 0
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if line.startswith("AnonHugePages:"):
                total += int(line.split()[1])
    return total


def upload(host, port, k, body):
    """One upload, retried while the node answers 503; the final status."""
    for _ in range(600):
        try:
            c = http.client.HTTPConnection(host, port, timeout=600)
            c.request("POST", f"/v1/audiences?name=burst-{k}", body=body,
                      headers={"Content-Type": "text/csv"})
            r = c.getresponse()
            r.read()
            c.close()
        except Exception as e:  # an answer never came: count it
            return f"error: {type(e).__name__}"
        if r.status != 503:
            return r.status
        time.sleep(float(r.getheader("Retry-After", "1")))
    return 503


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--uploads", type=int, default=260)
    ap.add_argument("--recipients", type=int, default=10_000)
    ap.add_argument("--idle", type=int, default=300, help="seconds idle after the burst")
    ap.add_argument("--every", type=int, default=10, help="seconds between samples")
    ap.add_argument("--api", action="append", default=[], help="a line under [api]")
    a = ap.parse_args()
    extra = ("[api]\n" + "\n".join(a.api) + "\n") if a.api else ""
    p, host, port, _ = start_serve(a.binary, "burst-idle-", extra)
    time.sleep(2)
    start = (status_kib(p.pid, "VmRSS:"), threads(p.pid), anon_huge_kib(p.pid))
    peak = [start[0], start[1]]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            try:
                peak[0] = max(peak[0], status_kib(p.pid, "VmRSS:"))
                peak[1] = max(peak[1], threads(p.pid))
            except OSError:
                return
            time.sleep(0.05)

    threading.Thread(target=sample, daemon=True).start()
    body = "".join(f"user-{i}\n" for i in range(a.recipients)).encode()
    results = [None] * a.uploads

    def send(k):
        results[k] = upload(host, port, k, body)

    t0 = time.time()
    ts = [threading.Thread(target=send, args=(k,)) for k in range(a.uploads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    burst_s = time.time() - t0
    stop.set()
    counts = {}
    for r in results:
        counts[str(r)] = counts.get(str(r), 0) + 1
    print(f"start: rss_mib={start[0]/1024:.0f} threads={start[1]} anon_huge_mib={start[2]/1024:.0f}")
    print(f"burst: {a.uploads} uploads of {a.recipients} recipients in {burst_s:.1f} s, "
          f"answers={counts}, peak rss_mib={peak[0]/1024:.0f} peak threads={peak[1]}")
    samples = []
    t1 = time.time()
    while True:
        t = time.time() - t1
        s = (t, status_kib(p.pid, "VmRSS:"), threads(p.pid), anon_huge_kib(p.pid))
        samples.append(s)
        print(f"idle {s[0]:5.0f} s: rss_mib={s[1]/1024:.0f} threads={s[2]} anon_huge_mib={s[3]/1024:.0f}",
              flush=True)
        if t >= a.idle:
            break
        time.sleep(max(0.0, min(a.every, a.idle - t)))
    alive = p.poll() is None
    stop_serve(p)
    after_60 = next((s for s in samples if s[0] >= 60), samples[-1])
    print(f"summary: rss_mib start {start[0]/1024:.0f}, peak {peak[0]/1024:.0f}, "
          f"idle 60 s {after_60[1]/1024:.0f}, idle {a.idle} s {samples[-1][1]/1024:.0f}, "
          f"max idle {max(s[1] for s in samples)/1024:.0f}; threads start {start[1]}, peak {peak[1]}, "
          f"end {samples[-1][2]}; anon_huge_mib end {samples[-1][3]/1024:.0f}; alive={alive}")


if __name__ == "__main__":
    sys.exit(main())
