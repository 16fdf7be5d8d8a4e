#!/usr/bin/env python3
"""Peak RSS of `herald serve` (SQLite) under N concurrent bulk requests.

Starts the given herald binary on a temporary SQLite store, sends N concurrent
`POST /v1/timers:bulk` bodies of SIZE MiB each (generated on the fly and sent
chunked, so this script holds no body in memory), samples the server's VmRSS
every 50 ms, and prints the idle RSS, the peak RSS, and each answer's status.

    python3 scripts/bulk_rss.py target/release/herald --requests 20 --mib 64
"""
import argparse, http.client, sys, threading, time

from herald_proc import start_serve, status_kib, stop as stop_serve

def rss_kib(pid, field="VmRSS:"):
    return status_kib(pid, field)

def body(mib, lines_max):
    # Timers due in a day, padded so the request reaches `mib` MiB within the
    # default 100,000-line limit (about 700 bytes a line).
    target = mib * 1024 * 1024
    per_line = max(200, target // lines_max + 1)
    sent, i = 0, 0
    while True:
        head = '{"delay_ms":86400000,"channel":"log","recipient":"u%d","message":{"pad":"' % i
        line = (head + "x" * max(0, per_line - len(head) - 4) + '"}}\n').encode()
        if sent + len(line) > target:
            return
        sent += len(line)
        i += 1
        yield line

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--lines", type=int, default=99_000)
    a = ap.parse_args()
    p, host, port, _ = start_serve(a.binary, "bulk-rss-")
    time.sleep(1)
    idle = rss_kib(p.pid)
    peak = [idle, 0, 0]
    stop = threading.Event()
    def sample():
        while not stop.is_set():
            try:
                peak[0] = max(peak[0], rss_kib(p.pid))
                # Anonymous memory (heap) and file pages mapped (SQLite's
                # shared-memory index) are shown apart.
                peak[1] = max(peak[1], rss_kib(p.pid, "RssAnon:"))
                peak[2] = max(peak[2], rss_kib(p.pid, "RssFile:") + rss_kib(p.pid, "RssShmem:"))
            except OSError:
                return
            time.sleep(0.05)
    threading.Thread(target=sample, daemon=True).start()
    results = [None] * a.requests
    def send(k):
        try:
            c = http.client.HTTPConnection(host, port, timeout=600)
            c.request("POST", "/v1/timers:bulk", body=body(a.mib, a.lines),
                      headers={"Content-Type": "application/x-ndjson"}, encode_chunked=True)
            r = c.getresponse()
            r.read()
            results[k] = r.status
        except Exception as e:  # an answer never came: count it
            results[k] = f"error: {type(e).__name__}"
    t0 = time.time()
    ts = [threading.Thread(target=send, args=(k,)) for k in range(a.requests)]
    for t in ts: t.start()
    for t in ts: t.join()
    elapsed = time.time() - t0
    time.sleep(0.5)
    stop.set()
    alive = p.poll() is None
    stop_serve(p)
    counts = {}
    for r in results:
        counts[str(r)] = counts.get(str(r), 0) + 1
    print(f"requests={a.requests} mib_each={a.mib} idle_rss_mib={idle/1024:.0f} "
          f"peak_rss_mib={peak[0]/1024:.0f} (anon {peak[1]/1024:.0f}, file {peak[2]/1024:.0f}) answers={counts} alive_after={alive} "
          f"elapsed_s={elapsed:.1f}")

if __name__ == "__main__":
    sys.exit(main())
