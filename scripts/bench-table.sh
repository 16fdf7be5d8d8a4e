#!/usr/bin/env bash
# The current benchmark table of BENCHMARKS.md: builds the release binary at
# the checked-out commit, runs each scenario RUNS times (3 by default) with
# `--json`, and prints a markdown table of the medians, headed by the commit.
#
#   scripts/bench-table.sh            # SQLite: burst, precision, ingest, campaign, reminders, restart, memory
#   scripts/bench-table.sh --pg       # also the PostgreSQL burst (builds with --features bench-pg)
#   RUNS=1 scripts/bench-table.sh     # one run each, for a quick look
#
# Every run's JSON line is kept in target/bench-table/COMMIT/ so a figure can
# be traced to its run. Run it on a quiet machine: the scenarios take about
# half an hour, and the load generator, the sink and the server share it.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${RUNS:-3}"
PG=0
for arg in "$@"; do
    case "$arg" in
        --pg) PG=1 ;;
        *) echo "usage: $0 [--pg]" >&2; exit 2 ;;
    esac
done

COMMIT="$(git rev-parse --short HEAD)"
if ! git diff --quiet HEAD -- crates Cargo.toml Cargo.lock; then
    COMMIT="${COMMIT}-dirty"
fi
OUT="target/bench-table/${COMMIT}"
mkdir -p "$OUT"
rm -f "$OUT"/*.jsonl

if [ "$PG" = 1 ]; then
    cargo build --release --locked -p herald --features bench-pg
else
    cargo build --release --locked -p herald
fi
BIN=target/release/herald

# run NAME COMMAND...: RUNS times, keeping each run's JSON summary line.
run() {
    local name="$1"
    shift
    for i in $(seq 1 "$RUNS"); do
        echo "== $name, run $i of $RUNS: $*" >&2
        "$@" | tee "$OUT/$name.$i.log" | grep '^{' | tail -n 1 >>"$OUT/$name.jsonl"
    done
}

run burst          "$BIN" bench burst --timers 1000000 --json
run precision      "$BIN" bench precision --timers 100000 --spread-secs 60 --json
run ingest-single  "$BIN" bench ingest --timers 200000 --clients 64 --json
run ingest-bulk    "$BIN" bench ingest --timers 1000000 --bulk 10000 --clients 2 --json
run campaign       "$BIN" bench campaign --recipients 1000000 --json
run reminders      "$BIN" bench reminders --users 1000000 --directory --json
run restart        "$BIN" bench restart --timers 10000000 --json
for i in $(seq 1 "$RUNS"); do
    echo "== memory, run $i of $RUNS" >&2
    python3 scripts/bulk_rss.py "$BIN" --requests 20 --mib 64 | tee "$OUT/memory.$i.log" |
        python3 -c 'import json, re, sys
line = sys.stdin.read()
m = re.search(r"peak_rss_mib=(\d+)", line)
print(json.dumps({"scenario": "memory", "peak_rss_mib": int(m.group(1)) if m else None}))' >>"$OUT/memory.jsonl"
done
if [ "$PG" = 1 ]; then
    run pg-burst   "$BIN" bench burst --store postgres --timers 1000000 --json
fi

python3 - "$OUT" "$COMMIT" "$RUNS" <<'EOF'
import json, os, statistics, sys

out, commit, runs = sys.argv[1], sys.argv[2], sys.argv[3]

def runs_of(name):
    path = os.path.join(out, name + ".jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]

def med(name, *keys):
    vals = []
    for r in runs_of(name):
        v = r
        for k in keys:
            v = v.get(k) if isinstance(v, dict) else None
        if isinstance(v, (int, float)):
            vals.append(v)
    return statistics.median(vals) if vals else None

def fmt(v, unit="", digits=0):
    if v is None:
        return "not measured"
    return f"{v:,.{digits}f}{unit}"

rows = [
    ("burst: 1,000,000 timers due at one instant, all done",
     "`herald bench burst --timers 1000000`",
     f"{fmt(med('burst', 'done_s'), ' s', 1)} ({fmt(med('burst', 'drain_per_sec'), '/s')}, "
     f"{fmt(100 * (med('burst', 'drain_share_of_loopback') or 0) if med('burst', 'drain_share_of_loopback') else None, '%')} of the loopback limit)"),
    ("precision: 100,000 timers over 60 s, lateness at the sink",
     "`herald bench precision --timers 100000 --spread-secs 60`",
     f"p50 {fmt(med('precision', 'lateness_ms', 'p50'), ' ms')}, p99 {fmt(med('precision', 'lateness_ms', 'p99'), ' ms')}, "
     f"max {fmt(med('precision', 'lateness_ms', 'max'), ' ms')}"),
    ("ingest, single `POST /v1/timers`",
     "`herald bench ingest --timers 200000 --clients 64`",
     fmt(med('ingest-single', 'per_sec'), ' timers/s')),
    ("ingest, bulk endpoint",
     "`herald bench ingest --timers 1000000 --bulk 10000 --clients 2`",
     fmt(med('ingest-bulk', 'per_sec'), ' timers/s')),
    ("campaign: one job to 1,000,000 recipients",
     "`herald bench campaign --recipients 1000000`",
     f"{fmt(med('campaign', 'recipients_per_sec'), ' recipients/s')}, upload {fmt(med('campaign', 'upload_per_sec'), '/s')}"),
    ("reminders: 1,000,000 users of one subject, through the directory",
     "`herald bench reminders --users 1000000 --directory`",
     f"subscribe {fmt(med('reminders', 'subscribe_per_sec'), '/s')}, drained in {fmt(med('reminders', 'done_s'), ' s', 1)}"),
    ("restart: `kill -9` with 10,000,000 pending",
     "`herald bench restart --timers 10000000`",
     f"first delivery {fmt(med('restart', 'first_ms'), ' ms')} after spawn, RSS "
     f"{fmt((med('restart', 'rss_bytes') or 0) / 1048576 if med('restart', 'rss_bytes') else None, ' MiB')}"),
    ("memory: peak RSS under 20 concurrent 64 MiB bulk requests",
     "`python3 scripts/bulk_rss.py target/release/herald --requests 20 --mib 64`",
     fmt(med('memory', 'peak_rss_mib'), ' MiB')),
]
if runs_of("pg-burst"):
    n = 1_000_000
    cpu = [(r.get("server_cpu_s") or 0) + (r.get("pg_cpu_s") or 0) for r in runs_of("pg-burst")]
    rows.append(("PostgreSQL burst: 1,000,000 timers, server and PostgreSQL CPU per timer",
                 "`herald bench burst --store postgres --timers 1000000` (`--features bench-pg`)",
                 f"{fmt(med('pg-burst', 'done_s'), ' s', 1)}, {fmt(statistics.median(cpu) / n * 1e6, ' µs')} CPU a timer"))

print(f"Measured at commit `{commit}`, median of {runs} run(s) each, by `scripts/bench-table.sh`.")
print()
print("| scenario | command | median |")
print("|---|---|---|")
for name, cmd, fig in rows:
    print(f"| {name} | {cmd} | {fig} |")
EOF
