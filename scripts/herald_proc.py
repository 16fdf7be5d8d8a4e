"""What the memory scripts share: a `herald serve` child on a temporary
SQLite store, and reading a process's figures from /proc."""
import os, re, subprocess, tempfile, threading


def start_serve(binary, prefix, extra=""):
    """Starts `binary serve` on a fresh SQLite store in a temporary
    directory, `extra` appended to its configuration; returns the process,
    its host and port, and the directory (its log is herald.log there)."""
    d = tempfile.mkdtemp(prefix=prefix)
    cfg = os.path.join(d, "herald.toml")
    with open(cfg, "w") as f:
        f.write(f'listen = "127.0.0.1:0"\nstore = "sqlite://{d}/herald.db"\n{extra}')
    p = subprocess.Popen([binary, "serve", "--config", cfg], stdout=subprocess.PIPE,
                         stderr=open(os.path.join(d, "herald.log"), "w"), text=True)
    url = None
    for line in p.stdout:
        m = re.search(r" listening on http://([^/\s]+)", line)
        if m:
            url = m.group(1)
            break
    if url is None:
        raise SystemExit(f"herald did not start; see {d}/herald.log")
    # Keep reading its stdout so it never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in p.stdout], daemon=True).start()
    host, port = url.rsplit(":", 1)
    return p, host, int(port), d


def stop(p):
    """SIGTERM, then SIGKILL if it has not exited within 30 s."""
    p.terminate()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()


def status_kib(pid, field):
    """A `kB` field of /proc/PID/status (`VmRSS:`, `RssAnon:`, ...)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0
