#!/bin/bash
# The burst of two release builds in the same sitting, in turn, ROUNDS
# times each; prints each run and the medians (drain rate, the server's CPU
# per timer, and with `--store postgres` PostgreSQL's CPU per timer and the
# drain's share of the loopback limit).
#
#   scripts/bench/ab-burst.sh BASE_BINARY NEW_BINARY OUT.jsonl [ROUNDS] [TIMERS]
#   EXTRA="--lead-secs 40" scripts/bench/ab-burst.sh ...
#   EXTRA="--store postgres" scripts/bench/ab-burst.sh BASE NEW OUT 3 1000000
#
# Both servers run under NEW_BINARY's client and sink (HERALD_BENCH_SERVER),
# so only the server differs.
set -u
BASE=$1; NEW=$2; OUT=$3; R=${4:-3}; N=${5:-500000}; EXTRA=${EXTRA:-}
for r in $(seq 1 "$R"); do
  for who in base new; do
    if [ "$who" = base ]; then export HERALD_BENCH_SERVER=$BASE; else export HERALD_BENCH_SERVER=$NEW; fi
    s=$("$NEW" bench burst --timers "$N" $EXTRA --json 2>/dev/null | grep '^{')
    echo "{\"round\":$r,\"server\":\"$who\",\"result\":${s:-null}}" >> "$OUT"
  done
done
python3 - "$OUT" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def col(who, f):
    return [f(r["result"]) for r in rows if r["server"] == who and r["result"]]
for name, f in (("drain/s", lambda x: x["drain_per_sec"]),
                ("server us/timer", lambda x: 1e6 * x["server_cpu_s"] / x["timers"]),
                ("postgres us/timer", lambda x: 1e6 * (x.get("pg_cpu_s") or 0) / x["timers"]),
                ("share of loopback", lambda x: x.get("drain_share_of_loopback") or 0)):
    b, n = col("base", f), col("new", f)
    if b and n and st.median(b) > 0:
        print(name, "base", [round(x, 1) for x in b], "new", [round(x, 1) for x in n],
              "median base %.1f new %.1f ratio %.3f" % (st.median(b), st.median(n), st.median(n) / st.median(b)))
PY
