#!/usr/bin/env python3
"""The standing API check: schemathesis against `/openapi.json` of a built
`herald`, on a fresh SQLite store and on a throwaway PostgreSQL cluster.

It builds nothing: give it the binary (a debug build is fine). For each
store it starts `herald serve` in protected mode (an admin key from the
environment), creates a tenant key with every tenant scope, and runs
`schemathesis run` with every check (`--checks all`: no 5xx, answers that
match their schemas, invalid input refused, valid input accepted, `405`s
with a right `Allow`, ...), every phase (examples, coverage, fuzzing,
stateful), a fixed seed and a fixed number of examples per operation. It
exits non-zero when any run finds a failure, and prints where the reports
and the server's log are.

    python3 scripts/schemathesis.py target/debug/herald
    python3 scripts/schemathesis.py target/debug/herald --stores sqlite --keys admin -n 50

schemathesis comes from the interpreter's own environment (CI installs the
pinned version into a venv and runs this file with that venv's python), or
from `PATH`. Its configuration is `scripts/schemathesis.toml`; every place
where it differs from the defaults says why.

PostgreSQL: `initdb` and `postgres` from `PATH` (or `$HERALD_PG_BIN`), run as
the `postgres` system user when this runs as root (PostgreSQL refuses root),
on a free loopback port, with `fsync` off: a throwaway cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "schemathesis.toml"
HOOKS = HERE / "schemathesis_hooks.py"
# The tenant the tenant key acts for, and the scopes it holds (all but admin).
TENANT = "fuzz"
TENANT_SCOPES = ["read", "write", "campaign", "metrics"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_tool(name: str) -> str:
    """`name` beside this interpreter (a venv), else on `PATH`."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if not found:
        sys.exit(f"{name} not found beside {sys.executable} or on PATH: pip install schemathesis")
    return found


def http(method: str, url: str, key: str | None = None, body: dict | None = None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


class Postgres:
    """A throwaway cluster in `root/pg`, on a free loopback port."""

    def __init__(self, root: Path):
        bindir = os.environ.get("HERALD_PG_BIN")
        self.initdb = str(Path(bindir) / "initdb") if bindir else shutil.which("initdb")
        self.postgres = str(Path(bindir) / "postgres") if bindir else shutil.which("postgres")
        if not self.initdb or not self.postgres:
            sys.exit("initdb/postgres not found (PATH or $HERALD_PG_BIN): PostgreSQL is required")
        self.dir = root / "pg"
        self.dir.mkdir()
        self.port = free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(root, user.pw_uid, user.pw_gid)
            os.chown(self.dir, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        subprocess.run(
            self.as_user + [self.initdb, "-D", str(self.dir), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        self.log = open(root / "postgres.log", "wb")
        self.proc = subprocess.Popen(
            self.as_user
            + [self.postgres, "-D", str(self.dir), "-p", str(self.port), "-k", str(self.dir),
               "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
               "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            # Its own process group: `runuser` does not pass signals on, so
            # the postmaster is stopped through the group.
            start_new_session=True,
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                # Accepting connections is not yet accepting logins; give it a moment.
                time.sleep(0.5)
                return
            except OSError:
                if self.proc.poll() is not None:
                    sys.exit(f"postgres exited with {self.proc.returncode}: see {root / 'postgres.log'}")
                time.sleep(0.2)
        sys.exit("postgres did not start in 60 s")

    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        group = os.getpgid(self.proc.pid) if self.proc.poll() is None else None
        if group is not None:
            os.killpg(group, signal.SIGINT)  # the postmaster's fast shutdown
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(group, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


class Herald:
    """`herald serve` on `store`, protected by a fresh admin key."""

    def __init__(self, binary: str, root: Path, store: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.admin_key = "adm-" + secrets.token_hex(16)
        config = root / "herald.toml"
        config.write_text(
            f'listen = "127.0.0.1:{self.port}"\n'
            f'store = "{store}"\n'
            "[auth]\n"
            'admin_key_env = "HERALD_SCHEMATHESIS_ADMIN_KEY"\n'
            f"[tenants.{TENANT}]\n"
            "[[channels]]\n"
            'name = "log"\n'
            'kind = "log"\n'
        )
        env = dict(os.environ, HERALD_SCHEMATHESIS_ADMIN_KEY=self.admin_key, RUST_LOG="warn")
        for var in ("HERALD_CONFIG", "HERALD_LISTEN", "HERALD_STORE"):
            env.pop(var, None)
        self.log_path = root / "herald.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [binary, "serve", "--config", str(config)],
            cwd=root,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"herald exited with {self.proc.returncode}: see {self.log_path}")
            try:
                if http("GET", f"{self.url}/healthz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        else:
            sys.exit(f"herald did not answer /healthz in 60 s: see {self.log_path}")
        status, key = http(
            "POST",
            f"{self.url}/v1/keys",
            self.admin_key,
            {"tenant": TENANT, "scopes": TENANT_SCOPES, "name": "schemathesis"},
        )
        if status != 201:
            sys.exit(f"creating the tenant key answered {status}: {key}")
        self.tenant_key = key["key"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def run_schemathesis(tool: str, herald: Herald, key_name: str, args, report_dir: Path) -> int:
    key = herald.admin_key if key_name == "admin" else herald.tenant_key
    cmd = [
        tool, "--config-file", str(CONFIG), "--no-color", "run", f"{herald.url}/openapi.json",
        "--checks", "all",
        "--phases", "examples,coverage,fuzzing,stateful",
        "--seed", str(args.seed),
        "--max-examples", str(args.max_examples),
        "--workers", str(args.workers),
        "--header", f"Authorization: Bearer {key}",
        "--report", "junit,ndjson",
        "--report-dir", str(report_dir),
    ]
    print(f"== schemathesis: {key_name} key, seed {args.seed}, {args.max_examples} examples per operation", flush=True)
    started = time.time()
    env = dict(os.environ, SCHEMATHESIS_HOOKS=str(HOOKS))
    # In the run's directory: schemathesis keeps a cache of what it found
    # (`.schemathesis/`) in its working directory.
    rc = subprocess.run(cmd, env=env, cwd=report_dir.parent).returncode
    print(f"== schemathesis: {key_name} key: exit {rc} in {time.time() - started:.0f} s", flush=True)
    return rc


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("herald", help="a built herald binary (target/debug/herald)")
    p.add_argument("--stores", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    # The tenant's run first: the admin's may revoke the tenant's key
    # (`DELETE /v1/keys/{id}` with a generated id).
    p.add_argument("--keys", default="tenant,admin", help="comma-separated: admin, tenant (a run each)")
    p.add_argument("-n", "--max-examples", type=int, default=int(os.environ.get("HERALD_SCHEMATHESIS_EXAMPLES", "8")))
    p.add_argument("--seed", type=int, default=int(os.environ.get("HERALD_SCHEMATHESIS_SEED", "35")))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--keep", action="store_true", help="keep the temporary directories")
    args = p.parse_args()
    binary = str(Path(args.herald).resolve())
    if not os.access(binary, os.X_OK):
        sys.exit(f"{binary} is not an executable: build it first (cargo build -p herald)")
    tool = find_tool("schemathesis")
    failed = []
    for store_kind in [s for s in args.stores.split(",") if s]:
        root = Path(tempfile.mkdtemp(prefix=f"herald-schemathesis-{store_kind}-"))
        pg = None
        herald = None
        try:
            if store_kind == "sqlite":
                store = f"sqlite://{root}/data/herald.db"
            elif store_kind == "postgres":
                pg = Postgres(root)
                store = pg.url()
            else:
                sys.exit(f"unknown store {store_kind!r}: sqlite or postgres")
            print(f"== {store_kind}: herald serve in {root}", flush=True)
            herald = Herald(binary, root, store)
            for key_name in [k for k in args.keys.split(",") if k]:
                if key_name not in ("admin", "tenant"):
                    sys.exit(f"unknown key {key_name!r}: admin or tenant")
                report = root / f"report-{key_name}"
                if run_schemathesis(tool, herald, key_name, args, report) != 0:
                    failed.append(f"{store_kind}/{key_name} (reports: {report}, server log: {herald.log_path})")
                if herald.proc.poll() is not None:
                    failed.append(f"{store_kind}: herald exited with {herald.proc.returncode}")
                    break
        finally:
            if herald:
                herald.stop()
            if pg:
                pg.stop()
            if not args.keep and not failed:
                shutil.rmtree(root, ignore_errors=True)
    if failed:
        print("== schemathesis FAILED: " + "; ".join(failed), flush=True)
        return 1
    print("== schemathesis: clean", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
