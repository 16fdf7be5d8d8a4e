#!/usr/bin/env bash
# The Python and TypeScript clients' CI gate, against a built herald:
#
#   bash scripts/ci/clients.sh target/debug/herald
#
# 1. Drift: regenerates both clients from BINARY's /openapi.json into a
#    temporary directory (clients/generate.sh, pinned generators) and fails,
#    showing the diff, when the committed clients/openapi.json or generated
#    code differ from it. Fix: clients/generate.sh --binary BINARY, commit.
#    It also checks that a node with other channels and reminder leads gives
#    the same document, so the committed clients fit every node.
# 2. Webhook fixtures: clients/webhook-fixtures/capture.py makes signed
#    deliveries with BINARY (unless HERALD_WEBHOOK_FIXTURES names a file).
# 3. The Python client's tests (unittest) and the TypeScript client's
#    (tsc, then node --test), each against BINARY over HTTP, verifier
#    fixtures included.
#
# The generators and test dependencies are installed once into
# ~/.cache/herald-clients-* (clients/tools.sh) and reused while their pins
# stay the same.
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: $0 HERALD_BINARY" >&2
    exit 2
fi
BINARY="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
cd "$(dirname "$0")/../.."
# shellcheck source=clients/tools.sh
. clients/tools.sh

WORK="$(mktemp -d "${TMPDIR:-/tmp}/herald-clients-ci.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
started=$SECONDS
step() { echo "== clients: $* ($((SECONDS - started)) s)"; }

step "tools"
herald_clients_python_tools
herald_clients_node_tools
PY="$HERALD_CLIENTS_VENV/bin/python"

step "drift: regenerating from $BINARY"
clients/generate.sh --binary "$BINARY" --out "$WORK/gen" >"$WORK/generate.log" 2>&1 || {
    cat "$WORK/generate.log" >&2
    exit 1
}
drift=0
for path in openapi.json python/herald_client/generated typescript/src/generated; do
    if ! diff -ru -x __pycache__ -x .ruff_cache "clients/$path" "$WORK/gen/$path" >"$WORK/drift.diff" 2>&1; then
        drift=1
        echo "clients/$path differs from what the current OpenAPI document generates:" >&2
        head -n 200 "$WORK/drift.diff" >&2
        lines=$(wc -l <"$WORK/drift.diff")
        if [ "$lines" -gt 200 ]; then echo "... ($lines lines of diff in all)" >&2; fi
    fi
done
if [ "$drift" = 1 ]; then
    echo "clients: the committed clients are stale; run clients/generate.sh --binary $1 and commit the result" >&2
    exit 1
fi

step "drift: a node with other channels and leads gives the same document"
cat >"$WORK/other.toml" <<'EOF'
[[channels]]
name = "hooks"
kind = "webhook"
url = "http://127.0.0.1:9/hook"
secret = "not-used"

[reminders]
leads_minutes = [0, 1, 90]
EOF
"$PY" clients/openapi_doc.py --binary "$BINARY" --extra-config "$WORK/other.toml" --out "$WORK/other.json" --quiet
if ! diff -u "$WORK/gen/openapi.json" "$WORK/other.json" >"$WORK/other.diff"; then
    head -n 100 "$WORK/other.diff" >&2
    echo "clients: /openapi.json still depends on the node's configuration beyond what clients/openapi_doc.py takes out" >&2
    exit 1
fi

if [ -z "${HERALD_WEBHOOK_FIXTURES:-}" ]; then
    step "webhook fixtures from $BINARY"
    python3 clients/webhook-fixtures/capture.py --herald "$BINARY" --out "$WORK/webhook-fixtures.json"
    export HERALD_WEBHOOK_FIXTURES="$WORK/webhook-fixtures.json"
fi
export HERALD_REQUIRE_FIXTURES=1
export HERALD_BIN="$BINARY"

step "python client tests"
"$PY" -m unittest discover -s clients/python/tests -t clients/python/tests

step "typescript client: tsc"
(cd clients/typescript && rm -rf dist && "$HERALD_CLIENTS_NODE_MODULES/.bin/tsc" -p tsconfig.json)
step "typescript client tests"
(cd clients/typescript && node --test --test-reporter=spec dist/test/*.test.js)

step "done"
