#!/bin/bash
# Single and bulk ingest of two release builds in the same sitting, in turn,
# ROUNDS times each; prints each run and the medians.
#
#   scripts/bench/ab-ingest.sh BASE_BINARY NEW_BINARY OUT.jsonl [ROUNDS]
#   EXTRA="--recipients scattered" scripts/bench/ab-ingest.sh ...
#
# Both servers run under NEW_BINARY's client and sink (HERALD_BENCH_SERVER),
# so only the server differs.
set -u
BASE=$1; NEW=$2; OUT=$3; R=${4:-3}; EXTRA=${EXTRA:-}
for r in $(seq 1 "$R"); do
  for who in base new; do
    if [ "$who" = base ]; then export HERALD_BENCH_SERVER=$BASE; else export HERALD_BENCH_SERVER=$NEW; fi
    s=$("$NEW" bench ingest --timers 200000 --clients 64 $EXTRA --json 2>/dev/null | grep '^{')
    echo "{\"round\":$r,\"server\":\"$who\",\"kind\":\"single\",\"result\":${s:-null}}" >> "$OUT"
    b=$("$NEW" bench ingest --timers 1000000 --bulk 10000 --clients 2 $EXTRA --json 2>/dev/null | grep '^{')
    echo "{\"round\":$r,\"server\":\"$who\",\"kind\":\"bulk\",\"result\":${b:-null}}" >> "$OUT"
  done
done
python3 - "$OUT" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for k in ("single", "bulk"):
    b = [r["result"]["per_sec"] for r in rows if r["kind"] == k and r["server"] == "base" and r["result"]]
    n = [r["result"]["per_sec"] for r in rows if r["kind"] == k and r["server"] == "new" and r["result"]]
    if b and n:
        print(k, "base", [round(x) for x in b], "new", [round(x) for x in n],
              "median base %.0f new %.0f ratio %.3f" % (st.median(b), st.median(n), st.median(n) / st.median(b)))
PY
