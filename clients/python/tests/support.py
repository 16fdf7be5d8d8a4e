"""What the tests share: a real `herald serve` on a throwaway store, and a
small HTTP proxy in front of it that can lose an answer or answer `503`
in Herald's place, to see what the client's retries do."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def herald_binary() -> str:
    """HERALD_BIN, else the debug build of this repository."""
    binary = os.path.abspath(os.environ.get("HERALD_BIN") or str(REPO / "target" / "debug" / "herald"))
    if not os.access(binary, os.X_OK):
        raise RuntimeError(f"no herald binary at {binary}: set HERALD_BIN")
    return binary


class Node:
    """`herald serve` in open mode on 127.0.0.1, a free port, SQLite in a
    temporary directory, with `extra` appended to its configuration."""

    def __init__(self, extra: str = "") -> None:
        self.dir = tempfile.mkdtemp(prefix="herald-client-py-")
        cfg = os.path.join(self.dir, "herald.toml")
        with open(cfg, "w") as f:
            f.write(f'listen = "127.0.0.1:0"\nstore = "sqlite://{self.dir}/herald.db"\n{extra}')
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_") or k == "HERALD_BIN"}
        self.log = open(os.path.join(self.dir, "herald.log"), "w")
        self.proc = subprocess.Popen(
            [herald_binary(), "serve", "--config", cfg],
            cwd=self.dir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        self.url = None
        for line in self.proc.stdout:
            m = re.search(r" listening on (http://[^/\s]+)", line)
            if m:
                self.url = m.group(1)
                break
        if self.url is None:
            self.stop()
            raise RuntimeError(f"herald did not start; see {self.dir}/herald.log")
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class FaultProxy:
    """Forwards HTTP/1.1 requests to `upstream` ("host:port"). `fail(method,
    path, action)` arms one fault for the next request that matches:

    - "lose_answer": the request reaches Herald, then the connection is
      closed before its answer is passed on (the client cannot know whether
      it was written);
    - "unavailable": answers `503 unavailable` with `Retry-After: 1` in
      Herald's place, without forwarding.

    `seen` counts the requests by (method, path)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.removeprefix("http://")
        self.faults: list[tuple[str, str, str]] = []
        self.seen: dict[tuple[str, str], int] = {}
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_):
                pass

            def _handle(self):
                path = self.path.split("?", 1)[0]
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy.lock:
                    proxy.seen[(self.command, path)] = proxy.seen.get((self.command, path), 0) + 1
                    action = None
                    for i, (m, p, a) in enumerate(proxy.faults):
                        if m == self.command and p == path:
                            action = a
                            del proxy.faults[i]
                            break
                if action == "unavailable":
                    data = json.dumps({"error": {"code": "unavailable", "message": "injected by the test proxy"}}).encode()
                    self.send_response(503)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Retry-After", "1")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                status, headers, data = proxy.forward(self.command, self.path, self.headers, body)
                if action == "lose_answer":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(status)
                for k, v in headers:
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def forward(self, method, path, headers, body):
        conn = http.client.HTTPConnection(self.upstream, timeout=30)
        try:
            out = {k: v for k, v in headers.items() if k.lower() not in ("host", "connection", "content-length")}
            conn.request(method, path, body=body or None, headers=out)
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            conn.close()

    def fail(self, method: str, path: str, action: str) -> None:
        with self.lock:
            self.faults.append((method, path, action))

    def count(self, method: str, path: str) -> int:
        with self.lock:
            return self.seen.get((method, path), 0)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def wait_until(predicate, timeout_s: float = 10.0, step_s: float = 0.05):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(step_s)
