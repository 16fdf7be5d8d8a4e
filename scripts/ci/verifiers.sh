#!/usr/bin/env bash
# Tests the Go and Java webhook verifiers (clients/go, clients/java) against
# signatures the real binary makes:
#
#   scripts/ci/verifiers.sh path/to/herald
#
# Installs Debian's golang-go and default-jdk-headless when go or javac is
# missing (a one-time cost on a fresh machine). Offline: standard libraries
# only, GOPROXY=off, no Maven.
set -euo pipefail
cd "$(dirname "$0")/../.."
HERALD_BIN=$(realpath "${1:?usage: scripts/ci/verifiers.sh HERALD_BINARY}")

missing=()
command -v go >/dev/null || missing+=(golang-go)
{ command -v javac >/dev/null && command -v java >/dev/null; } || missing+=(default-jdk-headless)
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${missing[*]} (webhook verifier tests)"
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/herald-verifiers.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== webhook fixtures from $HERALD_BIN"
python3 clients/webhook-fixtures/capture.py --herald "$HERALD_BIN" --out "$work/fixtures.json"
export HERALD_WEBHOOK_FIXTURES="$work/fixtures.json"
export HERALD_REQUIRE_FIXTURES=1

echo "== go verifier"
(
    cd clients/go/heraldwebhook
    export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GOTELEMETRY=off
    export GOCACHE="${GOCACHE:-$HOME/.cache/herald-go-build}"
    # go test runs vet's own checks too; a separate go vet would double the
    # cold build on a fresh machine.
    go test -count=1 ./...
)

echo "== java verifier"
javac --release 8 -Xlint:all,-options -Werror -d "$work/classes" $(find clients/java/src -name '*.java' | sort)
java -cp "$work/classes" dev.herald.webhook.VerifierTest
