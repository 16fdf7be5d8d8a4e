#!/usr/bin/env python3
"""What a timer insert costs plain SQLite as the table gains indexes.

    python3 scripts/bench/sqlite-insert-model.py [ROWS]

Builds `timers` as migration 0042 leaves it (the due and key indexes,
then six partial indexes a new timer never enters), inserts ROWS timers
(300,000 unless given) in transactions of 3,000, and prints rows a second:
  - one statement a row, with the two indexes of `38d87d4` and with all eight;
  - one statement for 50 rows (multi-row `VALUES`), the same two ways.
A partial index costs an insert even when the row is not in it: SQLite
opens a cursor on every index of the table for each statement.
"""
import os
import sqlite3
import sys
import tempfile
import time

COLS = ("shard,due_at,priority,kind,state,channel,recipient,message,idempotency_key,"
        "attempts,created_at,updated_at,tenant_id,traceparent,routing,filed")
PARTIAL = [
    "CREATE INDEX a ON timers (shard, id) WHERE state = 1",
    "CREATE INDEX b ON timers (tenant_id, due_at) WHERE filed = 1",
    "CREATE INDEX c ON timers (tenant_id, state, due_at) WHERE filed = 1",
    "CREATE INDEX d ON timers (tenant_id, recipient, due_at) WHERE filed = 1",
    "CREATE INDEX e ON timers (updated_at, id) WHERE state >= 2 AND kind <> 'reminder'",
    "CREATE INDEX f ON timers (id) WHERE filed = 0",
]


def table(path, extra):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode=wal")
    c.execute("PRAGMA synchronous=normal")
    c.execute("PRAGMA cache_size=-65536")
    c.execute("""CREATE TABLE timers (id INTEGER PRIMARY KEY AUTOINCREMENT,
        shard INTEGER NOT NULL, due_at INTEGER NOT NULL, priority INTEGER NOT NULL,
        kind TEXT NOT NULL, state INTEGER NOT NULL, channel TEXT NOT NULL,
        recipient TEXT NOT NULL, message TEXT NOT NULL, idempotency_key TEXT,
        attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT, created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL, delivered_at INTEGER, tenant_id INTEGER NOT NULL DEFAULT 1,
        attempt_base INTEGER NOT NULL DEFAULT 0, traceparent TEXT, routing TEXT,
        filed INTEGER NOT NULL DEFAULT 1) STRICT""")
    c.execute("CREATE INDEX pd ON timers (due_at, id) WHERE state = 0")
    c.execute("CREATE UNIQUE INDEX ik ON timers (idempotency_key, tenant_id) "
              "WHERE idempotency_key IS NOT NULL")
    for sql in extra:
        c.execute(sql)
    return c


def rows(n):
    return [(i % 256, 10**12 + i // 100, 0, "timer", 0, "sink", f"user-{i}",
             '{"text":"hello world"}', None, 0, 5, 5, 1, None, None, 0) for i in range(n)]


def run(path, extra, n, per, batch=3000):
    c = table(path, extra)
    data = rows(n)
    one = "(" + ",".join("?" * 16) + ")"
    sql = f"INSERT INTO timers ({COLS}) VALUES " + ",".join([one] * per)
    start = time.perf_counter()
    for b in range(0, n, batch):
        c.execute("BEGIN IMMEDIATE")
        if per == 1:
            c.executemany(sql, data[b:b + batch])
        else:
            for k in range(b, b + batch, per):
                c.execute(sql, [v for r in data[k:k + per] for v in r])
        c.execute("COMMIT")
    c.close()
    return n / (time.perf_counter() - start)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300_000
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.db")
        for per in (1, 50):
            for name, extra in (("two indexes", []), ("eight indexes", PARTIAL)):
                print(f"{per:>2} a statement, {name:>13}: {run(path, extra, n, per):>9,.0f} rows/s")


if __name__ == "__main__":
    main()
