#!/usr/bin/env python3
"""A discarding OTLP/HTTP receiver for benchmarks: answers every
`POST /v1/traces` with 200 and an empty protobuf body, and on exit prints
how many requests and bytes it took. It decodes nothing, so what it costs
is the HTTP exchange alone.

    python3 scripts/otlp_sink.py --port 4318 &
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 target/release/herald bench burst ...
"""
import argparse
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOTAL = {"requests": 0, "bytes": 0}


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        self.rfile.read(n)
        TOTAL["requests"] += 1
        TOTAL["bytes"] += n
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=4318)
    a = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Sink)

    def stop(*_):
        print(f"requests={TOTAL['requests']} bytes={TOTAL['bytes']}", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
