#!/usr/bin/env python3
"""The OpenAPI document the clients are generated from.

A node serves /openapi.json with a few values of its own configuration in
it: the channels it has (an `enum` on every body's `channel`) and its
reminder leads (an `enum` on `lead_minutes`). Clients generated from that
would refuse every other node's channels, so this script takes those enums
out, and writes the document with sorted keys and a fixed indent so that
the same binary always gives the same bytes.

    python3 clients/openapi_doc.py --binary target/debug/herald --out clients/openapi.json
    python3 clients/openapi_doc.py --binary BIN --extra-config more.toml --out other.json
    python3 clients/openapi_doc.py --normalize served.json --out clients/openapi.json

--binary starts `BIN serve` on a throwaway SQLite store on a free loopback
port (open mode, the default configuration plus --extra-config), reads
/openapi.json and stops it. Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

# Properties and query parameters whose enum lists what one node is
# configured with, not what the API takes.
NODE_ENUMS = {
    "channel": "A channel configured on the node (`GET /v1/channels` lists them).",
    "lead_minutes": "One of the node's `reminders.leads_minutes`.",
}


def _strip_enum(schema: dict, name: str, path: str, removed: list[str]) -> None:
    if not isinstance(schema, dict) or "enum" not in schema:
        return
    values = schema.pop("enum")
    if None in values:
        types = schema.get("type")
        if isinstance(types, str):
            types = [types]
        types = list(types or [])
        if "null" not in types:
            types.append("null")
        schema["type"] = types
    note = NODE_ENUMS[name]
    desc = schema.get("description")
    schema["description"] = f"{desc} {note}" if desc else note
    removed.append(path)


def normalize(doc: dict) -> tuple[dict, list[str]]:
    """Takes the node-specific enums out of `doc` (in place); returns it and
    the JSON paths it changed."""
    removed: list[str] = []

    def walk(node, path):
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                for name in NODE_ENUMS:
                    if name in props:
                        _strip_enum(props[name], name, f"{path}/properties/{name}", removed)
            if node.get("in") in ("query", "path") and node.get("name") in NODE_ENUMS:
                _strip_enum(node.get("schema"), node["name"], f"{path}/schema", removed)
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}/{i}")

    walk(doc, "")
    return doc, removed


def dump(doc: dict) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def fetch_from_binary(binary: str, extra_config: str | None) -> dict:
    """Runs `binary serve` on a temporary store and returns its /openapi.json."""
    if os.sep in binary:
        binary = os.path.abspath(binary)
    # The node's settings come from its file alone: HERALD_* variables of
    # the caller's environment (a listen address, a store) would override it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    with tempfile.TemporaryDirectory(prefix="herald-openapi-") as d:
        cfg = os.path.join(d, "herald.toml")
        with open(cfg, "w") as f:
            f.write(f'listen = "127.0.0.1:0"\nstore = "sqlite://{d}/herald.db"\n')
            if extra_config:
                with open(extra_config) as extra:
                    f.write(extra.read())
        log = open(os.path.join(d, "herald.log"), "w")
        proc = subprocess.Popen([binary, "serve", "--config", cfg], cwd=d, env=env,
                                stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            addr = _wait_listening(proc, 30)
            if addr is None:
                log.flush()
                with open(os.path.join(d, "herald.log")) as f:
                    sys.stderr.write(f.read()[-4000:])
                raise SystemExit(f"{binary} serve did not start")
            with urllib.request.urlopen(f"http://{addr}/openapi.json", timeout=30) as r:
                return json.load(r)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


def _wait_listening(proc: subprocess.Popen, timeout_s: float) -> str | None:
    found: list[str] = []
    done = threading.Event()

    def read():
        for line in proc.stdout:
            m = re.search(r" listening on http://([^/\s]+)", line)
            if m and not found:
                found.append(m.group(1))
                done.set()
        done.set()

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not done.is_set():
        done.wait(0.1)
    return found[0] if found else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--binary", help="a herald binary to start and ask")
    src.add_argument("--normalize", metavar="FILE", help="a saved /openapi.json")
    ap.add_argument("--extra-config", help="TOML appended to the node's configuration")
    ap.add_argument("--out", required=True, help="where to write the document ('-': stdout)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()

    if args.binary:
        doc = fetch_from_binary(args.binary, args.extra_config)
    else:
        with open(args.normalize) as f:
            doc = json.load(f)
    doc, removed = normalize(doc)
    if not args.quiet:
        for path in removed:
            print(f"openapi_doc: node-specific enum removed at {path}", file=sys.stderr)
    text = dump(doc)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
