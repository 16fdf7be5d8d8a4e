#!/usr/bin/env python3
"""Runs Herald's image root file system the way a container runtime would,
without one, and checks that it serves.

    probe.py check --rootfs DIR --image-config FILE

DIR is the image's root file system (a `buildah mount` of a container made
from the image, or an unpacked layer); FILE is the image's configuration as
JSON (`buildah inspect --type image`, or a bare OCI image config). What
runs is what the configuration says: its Entrypoint and Cmd, its Env, its
WorkingDir and its User, chrooted into DIR and, where `unshare` may make a
PID namespace, as PID 1 of its own namespace. Needs root (chroot).

The checks, each one failing the run:
  - the configuration: user 10001:10001, /data a volume, port 8780 exposed
    and listened on, `serve` the default command;
  - the file system: /data owned by the user, /tmp 1777, no shell;
  - with no admin key, listening beyond loopback is refused at start;
  - /readyz and /healthz answer 200; the API without a key answers 401;
  - a timer on the `log` channel and one on a webhook channel to
    http://localhost:PORT (a name looked up through the image's own
    /etc/nsswitch.conf and /etc/hosts) are delivered: state `done`, a
    `delivered` delivery row, the log line, the webhook's request with the
    timer's Idempotency-Key;
  - herald is PID 1 of its namespace and runs as 10001 (when unshare works);
  - SIGTERM while a webhook delivery is held 2 s: herald waits for it and
    exits with status 0, within 2 x drain_timeout_ms + 5 s;
  - the store is in the volume (/data/herald.db, owned by 10001), and a
    restart from it, on a read-only root with only the volumes writable
    (where `unshare` may make a mount namespace), still has every timer,
    the far one still pending, none sent twice; SIGTERM again, status 0.

    probe.py exec --rootfs DIR --workdir DIR --uid N --gid N
                  [--read-only-at DIR --volume PATH...] -- ARGV...

is the launcher `check` runs under `unshare`: (the read-only binds,) chroot,
chdir, drop to the user, exec, with the environment it was given and
nothing more.
"""

import argparse
import http.server
import json
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

DRAIN_TIMEOUT_S = 10  # engine.drain_timeout_ms's default, which the probe keeps
CONFIG_PATH = "/etc/herald/herald.toml"


class ProbeFailed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise ProbeFailed(what)
    print(f"  ok: {what}")


# ---------------------------------------------------------------- launcher


def launch(rootfs, workdir, uid, gid, argv, read_only_at=None, volumes=()):
    """Becomes ARGV inside ROOTFS, as a runtime starts a container's process.

    With READ_ONLY_AT (an empty directory; this process must be alone in
    its mount namespace), ROOTFS is bound there read-only, each volume
    bound writable over it, and that is the root: `docker run --read-only`.
    """
    if read_only_at:
        mount = shutil.which("mount", path="/usr/bin:/bin:/usr/sbin:/sbin")

        def run(*a):
            subprocess.run([mount, *a], check=True)

        run("--bind", rootfs, read_only_at)
        run("-o", "remount,bind,ro", read_only_at)
        for v in volumes:
            run("--bind", os.path.join(rootfs, v.lstrip("/")), os.path.join(read_only_at, v.lstrip("/")))
        rootfs = read_only_at
    os.chroot(rootfs)
    os.chdir(workdir)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    # Python ignores these two; an exec keeps ignored signals ignored, and a
    # container's process starts with every signal at its default.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    os.execve(argv[0], argv, dict(os.environ))


# ---------------------------------------------------------------- helpers


def load_image_config(path):
    with open(path) as f:
        doc = json.load(f)
    if isinstance(doc, list):  # `podman image inspect` answers a list
        doc = doc[0]
    if "OCIv1" in doc:  # `buildah inspect --type image`
        return doc["OCIv1"]["config"]
    if "config" in doc:  # an OCI image configuration blob
        return doc["config"]
    if "Config" in doc:  # `podman image inspect`
        return doc["Config"]
    return doc


def user_ids(rootfs, user):
    """The numeric uid and gid of an image's User ("uid:gid", "name", ...)."""
    name, _, group = user.partition(":")

    def lookup(file, key):
        with open(os.path.join(rootfs, "etc", file)) as f:
            for line in f:
                parts = line.strip().split(":")
                if parts[0] == key:
                    return parts
        raise ProbeFailed(f"user {key!r} not in the image's /etc/{file}")

    if name.isdigit():
        uid = int(name)
        default_gid = uid
    else:
        entry = lookup("passwd", name)
        uid, default_gid = int(entry[2]), int(entry[3])
    if not group:
        gid = default_gid
    elif group.isdigit():
        gid = int(group)
    else:
        gid = int(lookup("group", group)[2])
    return uid, gid


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(method, url, body=None, key=None, timeout=5):
    """(status, parsed JSON or None); a refused connection is status 0."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("content-type", "application/json")
    if key:
        req.add_header("authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        raw = e.read()
        status = e.code
    except (urllib.error.URLError, ConnectionError, socket.timeout):
        return 0, None
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, None


class Hooks:
    """A webhook receiver on loopback that records every POST."""

    SLOW_S = 2.0  # how long a request for recipient "image-probe-slow" is held

    def __init__(self):
        self.received = []
        self.slow_arrived = threading.Event()
        hooks = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                body = self.rfile.read(length)
                hooks.received.append((self.path, dict(self.headers.items()), body))
                if b'"image-probe-slow"' in body:
                    hooks.slow_arrived.set()
                    time.sleep(hooks.SLOW_S)
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def namespaces():
    """unshare's path and the namespaces it may make here: ("pid", "mount")."""
    unshare = shutil.which("unshare")
    if not unshare:
        return None, ()
    made = []
    for flags, name in ((["--pid", "--fork", "--kill-child"], "pid"), (["--mount", "--propagation", "private"], "mount")):
        ok = subprocess.run([unshare, *flags, "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if ok.returncode == 0:
            made.append(name)
    return (unshare if made else None), tuple(made)


class Node:
    """One run of the image's process, its output in files under LOGDIR."""

    def __init__(self, rootfs, workdir, uid, gid, argv, env, ns, logdir, name, read_only_volumes=None):
        unshare, made = ns
        launcher = [sys.executable, os.path.abspath(__file__), "exec", "--rootfs", rootfs,
                    "--workdir", workdir, "--uid", str(uid), "--gid", str(gid)]
        flags = []
        if "pid" in made:
            flags += ["--pid", "--fork", "--kill-child"]
        if read_only_volumes is not None:
            mountpoint = os.path.join(logdir, f"{name}.root")
            os.mkdir(mountpoint)
            launcher += ["--read-only-at", mountpoint]
            for v in read_only_volumes:
                launcher += ["--volume", v]
            flags += ["--mount", "--propagation", "private"]
        launcher += ["--", *argv]
        cmd = [unshare, *flags, "--", *launcher] if flags else launcher
        unshare = unshare if "pid" in made else None
        self.out_path = os.path.join(logdir, f"{name}.stdout")
        self.err_path = os.path.join(logdir, f"{name}.stderr")
        self.out = open(self.out_path, "wb")
        self.err = open(self.err_path, "wb")
        self.unshare = unshare
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                                     stdout=self.out, stderr=self.err)

    def stdout(self):
        with open(self.out_path, errors="replace") as f:
            return f.read()

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def herald_pid(self):
        """The host pid of the image's process (the launcher after its exec)."""
        if not self.unshare:
            return self.proc.pid
        deadline = time.monotonic() + 10
        path = f"/proc/{self.proc.pid}/task/{self.proc.pid}/children"
        while time.monotonic() < deadline:
            try:
                with open(path) as f:
                    kids = f.read().split()
                if kids:
                    return int(kids[0])
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        raise ProbeFailed("no child of unshare appeared")

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.kill(self.herald_pid(), signal.SIGKILL)
            except (ProbeFailed, ProcessLookupError):
                pass
            self.proc.kill()
            self.proc.wait()

    def close(self):
        self.kill()
        self.out.close()
        self.err.close()

    def dump(self, lines=40):
        for label, text in (("stdout", self.stdout()), ("stderr", self.stderr())):
            tail = text.splitlines()[-lines:]
            print(f"--- herald {label} (last {len(tail)} lines)")
            for line in tail:
                print(f"    {line}")


def root_mounts(pid):
    """{mount point: "ro" | "rw"} as the process sees them (from its root)."""
    out = {}
    with open(f"/proc/{pid}/mountinfo") as f:
        for line in f:
            fields = line.split()
            out[fields[4]] = "ro" if "ro" in fields[5].split(",") else "rw"
    return out


def wait_ready(node, base, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if node.proc.poll() is not None:
            raise ProbeFailed(f"herald exited with status {node.proc.returncode} before it was ready")
        status, body = call("GET", f"{base}/readyz", timeout=2)
        if status == 200:
            return body
        time.sleep(0.2)
    raise ProbeFailed(f"/readyz did not answer 200 within {timeout} s")


def wait_done(base, key, timer_id, timeout=30):
    deadline = time.monotonic() + timeout
    body = None
    while time.monotonic() < deadline:
        status, body = call("GET", f"{base}/v1/timers/{timer_id}", key=key)
        if status == 200 and body and body.get("state") in ("done", "failed", "dead"):
            return body
        time.sleep(0.2)
    return body


def stop(node, bound):
    pid = node.herald_pid()
    started = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    rc = node.wait(bound)
    took = time.monotonic() - started
    check(rc is not None, f"SIGTERM ended herald within {bound:.0f} s (took {took:.2f} s)")
    check(rc == 0, f"herald's exit status after SIGTERM is 0 (got {rc})")
    check("stopped" in node.stderr(), "herald logged 'stopped' after draining")
    return took


# ---------------------------------------------------------------- the probe


def probe(args):
    rootfs = os.path.abspath(args.rootfs)
    cfg = load_image_config(args.image_config)
    print(f"== image configuration ({args.image_config})")
    env = {}
    for item in cfg.get("Env") or []:
        k, _, v = item.partition("=")
        env[k] = v
    argv = list(cfg.get("Entrypoint") or []) + list(cfg.get("Cmd") or [])
    workdir = cfg.get("WorkingDir") or "/"
    user = cfg.get("User") or "0"
    for k in ("User", "WorkingDir", "Entrypoint", "Cmd", "Env", "ExposedPorts", "Volumes", "StopSignal"):
        print(f"  {k}: {json.dumps(cfg.get(k))}")
    uid, gid = user_ids(rootfs, user)
    check((uid, gid) == (10001, 10001), f"the image runs as 10001:10001 (User {user!r})")
    check(uid != 0, "the image does not run as root")
    check("/data" in (cfg.get("Volumes") or {}), "/data is a volume")
    check(cfg.get("Cmd") == ["serve"], "the default command is serve")
    check("8780/tcp" in (cfg.get("ExposedPorts") or {}), "port 8780 is exposed")
    listen = env.get("HERALD_LISTEN", "")
    host, _, port = listen.rpartition(":")
    check(host == "0.0.0.0" and port == "8780", f"HERALD_LISTEN listens on every interface at 8780 ({listen!r})")
    check(env.get("HERALD_STORE", "").startswith("sqlite:///data/"), f"the store is in /data ({env.get('HERALD_STORE')!r})")

    print(f"== root file system ({rootfs})")
    exe = os.path.join(rootfs, argv[0].lstrip("/"))
    check(os.path.isfile(exe) and os.access(exe, os.X_OK), f"the entrypoint {argv[0]} is an executable file")
    data = os.path.join(rootfs, "data")
    st = os.stat(data)
    check((st.st_uid, st.st_gid) == (uid, gid), "/data is owned by the image's user")
    check(os.listdir(data) == [], "/data is empty")
    tmp = os.stat(os.path.join(rootfs, "tmp"))
    check(stat.S_IMODE(tmp.st_mode) == 0o1777, "/tmp is mode 1777")
    check(not os.path.lexists(os.path.join(rootfs, "bin/sh")), "there is no /bin/sh")
    files = 0
    size = 0
    for dirpath, _, names in os.walk(rootfs):
        for n in names:
            p = os.path.join(dirpath, n)
            if os.path.isfile(p) and not os.path.islink(p):
                files += 1
                size += os.lstat(p).st_size
    print(f"  {files} files, {size} bytes ({size / 1e6:.1f} MB) uncompressed")

    # A configuration file, as an operator would mount one at CONFIG_PATH:
    # the embedded log channel, and a webhook to a name, not an address.
    hooks = Hooks()
    conf_dir = os.path.join(rootfs, os.path.dirname(CONFIG_PATH).lstrip("/"))
    os.makedirs(conf_dir, mode=0o755, exist_ok=True)
    with open(os.path.join(rootfs, CONFIG_PATH.lstrip("/")), "w") as f:
        f.write('[[channels]]\nname = "log"\nkind = "log"\n\n'
                '[[channels]]\nname = "hook"\nkind = "webhook"\n'
                f'url = "http://localhost:{hooks.port}/hook"\n')
    os.chmod(os.path.join(rootfs, CONFIG_PATH.lstrip("/")), 0o644)

    ns = namespaces()
    print("== run: " + (f"{ns[0]} --pid: herald is PID 1 of its own PID namespace"
                        if "pid" in ns[1] else "no PID namespace (unshare missing or refused): herald is not PID 1"))
    logdir = tempfile.mkdtemp(prefix="herald-image-probe.")
    nodes = []
    try:
        # 1. Without an admin key a non-loopback listen is refused.
        port = free_port()
        run_env = dict(env)
        run_env["HERALD_LISTEN"] = f"{host}:{port}"
        run_env["HERALD_CONFIG"] = CONFIG_PATH
        node = Node(rootfs, workdir, uid, gid, argv, run_env, ns, logdir, "no-key")
        nodes.append(node)
        rc = node.wait(30)
        check(rc not in (None, 0), f"with no admin key, serve on {host} refuses to start (status {rc})")
        check("HERALD_ADMIN_KEY" in node.stderr(), "the refusal names HERALD_ADMIN_KEY")

        # 2. With one it serves and delivers.
        key = secrets.token_hex(16)
        run_env["HERALD_ADMIN_KEY"] = key
        node = Node(rootfs, workdir, uid, gid, argv, run_env, ns, logdir, "first")
        nodes.append(node)
        base = f"http://127.0.0.1:{port}"
        started = time.monotonic()
        ready = wait_ready(node, base)
        check(True, f"/readyz answered 200 {json.dumps(ready)} after {time.monotonic() - started:.2f} s")
        check(f"herald listening on http://{host}:{port}" in node.stdout(),
              f"herald printed 'herald listening on http://{host}:{port}'")
        status, body = call("GET", f"{base}/healthz")
        check(status == 200, f"/healthz answered {status} {json.dumps(body)}")
        status, _ = call("GET", f"{base}/v1/timers?limit=1")
        check(status == 401, f"the API without a key answers 401 (got {status})")

        pid = node.herald_pid()
        with open(f"/proc/{pid}/status") as f:
            proc = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        check(proc["Uid"].split()[0] == str(uid) and proc["Gid"].split()[0] == str(gid),
              f"herald runs as uid {uid} gid {gid}")
        if "pid" in ns[1] and "NSpid" in proc:
            check(proc["NSpid"].split()[-1] == "1", f"herald is PID 1 in its namespace (NSpid {' '.join(proc['NSpid'].split())})")

        tag = secrets.token_hex(4)
        timers = {}
        for channel in ("log", "hook"):
            req = {"delay_ms": 1000, "channel": channel, "recipient": f"image-probe-{channel}",
                   "message": {"probe": channel}, "idempotency_key": f"image-probe-{channel}-{tag}"}
            status, body = call("POST", f"{base}/v1/timers", req, key=key)
            check(status == 201 and body and body.get("state") == "pending",
                  f"POST /v1/timers on {channel} answered {status}, state {body and body.get('state')}")
            timers[channel] = (body["id"], req["idempotency_key"])
        later = {"delay_ms": 3_600_000, "channel": "log", "recipient": "image-probe-later", "message": {}}
        status, body = call("POST", f"{base}/v1/timers", later, key=key)
        check(status == 201, f"POST /v1/timers due in an hour answered {status}")
        later_id = body["id"]

        for channel, (timer_id, ikey) in timers.items():
            body = wait_done(base, key, timer_id)
            check(body and body.get("state") == "done",
                  f"timer {timer_id} on {channel} is done (state {body and body.get('state')}, "
                  f"last_error {body and body.get('last_error')})")
            status, body = call("GET", f"{base}/v1/timers/{timer_id}/deliveries", key=key)
            rows = (body or {}).get("deliveries") or []
            check(status == 200 and len(rows) == 1 and rows[0]["outcome"] == "delivered",
                  f"timer {timer_id} has one delivery row, outcome "
                  f"{rows[0]['outcome'] if rows else None}")
        log_id = timers["log"][0]
        delivered = [line for line in node.stderr().splitlines()
                     if "herald::delivery" in line and f"timer_id={log_id} " in line + " "]
        check(len(delivered) == 1, f"the log channel logged the delivery: {delivered[0].strip() if delivered else None}")
        hook_id, hook_key = timers["hook"]
        got = [(p, h, b) for p, h, b in hooks.received if p == "/hook"]
        check(len(got) == 1, f"the webhook at localhost:{hooks.port} received {len(got)} request(s)")
        headers = {k.lower(): v for k, v in got[0][1].items()}
        payload = json.loads(got[0][2])
        check(headers.get("idempotency-key") == hook_key and payload.get("id") == hook_id
              and payload.get("recipient") == "image-probe-hook",
              f"the webhook request carries the timer (id {payload.get('id')}, "
              f"Idempotency-Key {headers.get('idempotency-key')})")

        db = os.path.join(data, "herald.db")
        check(os.path.isfile(db) and os.stat(db).st_uid == uid,
              f"the store is in the volume: /data/herald.db, owned by {uid}")

        # SIGTERM while a webhook delivery is under way: herald, PID 1,
        # waits for it and records it before it exits.
        slow = {"delay_ms": 0, "channel": "hook", "recipient": "image-probe-slow",
                "message": {"probe": "slow"}, "idempotency_key": f"image-probe-slow-{tag}"}
        status, body = call("POST", f"{base}/v1/timers", slow, key=key)
        check(status == 201, f"POST /v1/timers on hook, held {Hooks.SLOW_S:.0f} s by the receiver, answered {status}")
        slow_id = body["id"]
        check(hooks.slow_arrived.wait(15), "the slow delivery reached the webhook")
        first_stop = stop(node, 2 * DRAIN_TIMEOUT_S + 5)
        check(first_stop >= Hooks.SLOW_S * 0.8,
              f"the exit waited for the delivery under way ({first_stop:.2f} s, the receiver held it {Hooks.SLOW_S:.0f} s)")

        # 3. A restart from the same volume keeps everything, this time on a
        #    read-only root file system (`--read-only`) where a mount
        #    namespace may be made.
        volumes = sorted(cfg.get("Volumes") or {})
        read_only = "mount" in ns[1]
        node = Node(rootfs, workdir, uid, gid, argv, run_env, ns, logdir, "second",
                    read_only_volumes=volumes if read_only else None)
        nodes.append(node)
        wait_ready(node, base)
        if read_only:
            mounts = root_mounts(node.herald_pid())
            check(mounts.get("/") == "ro" and all(mounts.get(v) == "rw" for v in volumes),
                  f"restarted on a read-only root, the volumes writable ({mounts})")
        else:
            print("  skipped: a read-only root (unshare --mount missing or refused)")
        check(True, "restarted on the same /data: /readyz answers 200")
        states = {}
        for timer_id in (timers["log"][0], timers["hook"][0], slow_id, later_id):
            _, body = call("GET", f"{base}/v1/timers/{timer_id}", key=key)
            states[timer_id] = body and body.get("state")
        check(states == {timers["log"][0]: "done", timers["hook"][0]: "done", slow_id: "done", later_id: "pending"},
              f"after the restart the timers are {states}")
        second_stop = stop(node, 2 * DRAIN_TIMEOUT_S + 5)
        check(len(hooks.received) == 2, f"nothing was delivered twice across the restart "
              f"({len(hooks.received)} webhook requests for 2 webhook timers)")

        try:
            import sqlite3
        except ImportError:  # a Python built without it: the restart above checked the same
            print("  skipped: reading /data/herald.db (this Python has no sqlite3 module)")
        else:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                count = con.execute("SELECT count(*) FROM timers").fetchone()[0]
            finally:
                con.close()
            check(count == 4, f"/data/herald.db holds the 4 timers (read with sqlite3: {count})")
        listing = ", ".join(f"{n} {os.stat(os.path.join(data, n)).st_size} B" for n in sorted(os.listdir(data)))
        print(f"  /data after the runs: {listing}")
        print(f"== passed: SIGTERM exits took {first_stop:.2f} s and {second_stop:.2f} s")
        return 0
    except ProbeFailed as e:
        print(f"FAILED: {e}")
        for n in nodes[-1:]:
            n.dump()
        return 1
    finally:
        for n in nodes:
            n.close()
        hooks.close()
        shutil.rmtree(logdir, ignore_errors=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "exec":
        if "--" not in sys.argv:
            sys.exit("usage: probe.py exec --rootfs DIR --workdir DIR --uid N --gid N "
                     "[--read-only-at DIR --volume PATH...] -- ARGV...")
        cut = sys.argv.index("--")
        ep = argparse.ArgumentParser(prog="probe.py exec")
        ep.add_argument("--rootfs", required=True)
        ep.add_argument("--workdir", required=True)
        ep.add_argument("--uid", type=int, required=True)
        ep.add_argument("--gid", type=int, required=True)
        ep.add_argument("--read-only-at")
        ep.add_argument("--volume", action="append", default=[])
        a = ep.parse_args(sys.argv[2:cut])
        launch(a.rootfs, a.workdir, a.uid, a.gid, sys.argv[cut + 1:], a.read_only_at, a.volume)
        return
    sys.stdout.reconfigure(line_buffering=True)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("--rootfs", required=True)
    c.add_argument("--image-config", required=True)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("probe.py check needs root (chroot)")
    try:
        rc = probe(args)
    except ProbeFailed as e:
        print(f"FAILED: {e}")
        rc = 1
    sys.exit(rc)


if __name__ == "__main__":
    main()
