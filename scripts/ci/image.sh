#!/usr/bin/env bash
# CI step: builds Herald's OCI image from a binary and runs the image's own
# root file system.
#
#   bash scripts/ci/image.sh BINARY     # .ci/run passes target/debug/herald
#
# 1. installs buildah with apt-get when it is missing (no daemon needed);
# 2. strips a copy of BINARY (any build of herald will do: the debug one
#    the tests built saves CI a release build) and builds the Containerfile
#    with scripts/image/build.sh, into a throwaway store (vfs driver: no
#    overlay mount, so it works in a container too);
# 3. makes a container of the image with `buildah from`, mounts its root
#    file system, and runs scripts/image/probe.py on it: the image's
#    Entrypoint, Cmd, Env, WorkingDir and User, chrooted, as PID 1 of a
#    PID namespace; /readyz, /healthz, a timer on the log channel and one
#    on a webhook, the store in /data, SIGTERM, a restart;
# 4. prints the image's size: uncompressed, and its layer compressed
#    (gzip, as `buildah push` writes it to a registry or an OCI layout).
# Everything it made is removed on exit, failed or not. Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)

if [ $# -ne 1 ]; then
    echo "usage: $0 BINARY" >&2
    exit 2
fi
BINARY=$1
[ -x "$BINARY" ] || { echo "image: no executable at $BINARY" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
if ! command -v buildah >/dev/null; then
    echo "== installing buildah (the image build)"
    t0=$(date +%s%N)
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends buildah >/dev/null
    t1=$(date +%s%N)
    echo "installed $(buildah --version) in $(((t1 - t0) / 1000000)) ms"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/herald-image-ci.XXXXXX")
export CONTAINERS_STORAGE_CONF=$WORK/storage.conf
printf '[storage]\ndriver = "vfs"\ngraphroot = "%s"\nrunroot = "%s"\n' "$WORK/storage" "$WORK/run" >"$CONTAINERS_STORAGE_CONF"
B=(buildah)
if [ -n "$SUDO" ]; then B=(sudo --preserve-env=CONTAINERS_STORAGE_CONF buildah); fi
CONTAINER=""
cleanup() {
    if [ -n "$CONTAINER" ]; then
        "${B[@]}" umount "$CONTAINER" >/dev/null 2>&1 || true
        "${B[@]}" rm "$CONTAINER" >/dev/null 2>&1 || true
    fi
    "${B[@]}" rmi --all --force >/dev/null 2>&1 || true
    $SUDO rm -rf "$WORK"
}
trap cleanup EXIT

started=$(date +%s.%N)
echo "== image: strip a copy of $BINARY ($(du -h "$BINARY" | cut -f1))"
if command -v strip >/dev/null; then
    strip -o "$WORK/herald" "$BINARY"
elif command -v objcopy >/dev/null; then
    objcopy --strip-debug "$BINARY" "$WORK/herald"
else
    cp "$BINARY" "$WORK/herald"
fi
chmod 0755 "$WORK/herald"
echo "$("$WORK/herald" version | head -1), $(du -h "$WORK/herald" | cut -f1) stripped"

echo "== image: build"
TAG=$(CONTEXT="$WORK/context" IMAGE=herald BUILDER=buildah \
    $SUDO ${SUDO:+--preserve-env=CONTEXT,IMAGE,BUILDER,CONTAINERS_STORAGE_CONF} \
    scripts/image/build.sh "$WORK/herald" | tee "$WORK/build.log" | tail -n1)
grep -E '^(staged|  |== )' "$WORK/build.log" || true
echo "built $TAG"

echo "== image: run its root file system"
"${B[@]}" inspect --type image "$TAG" >"$WORK/image.json"
CONTAINER=$("${B[@]}" from --name herald-image-ci "$TAG")
ROOTFS=$("${B[@]}" mount "$CONTAINER")
ROOTFS_KB=$($SUDO du -sk "$ROOTFS" | cut -f1)
$SUDO python3 "$REPO/scripts/image/probe.py" check --rootfs "$ROOTFS" --image-config "$WORK/image.json"

echo "== image: size"
if ! "${B[@]}" push --quiet "$TAG" "oci:$WORK/oci:$TAG" >"$WORK/push.log" 2>&1; then
    cat "$WORK/push.log" >&2
    exit 1
fi
python3 - "$WORK/oci" "$ROOTFS_KB" "$("${B[@]}" images --format '{{.Size}}' "$TAG")" <<'PY'
import json, os, sys
layout, rootfs_kb, listed = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def blob(digest):
    algo, hexd = digest.split(":")
    return os.path.join(layout, "blobs", algo, hexd)
index = json.load(open(os.path.join(layout, "index.json")))
manifest = json.load(open(blob(index["manifests"][0]["digest"])))
layers = manifest["layers"]
compressed = sum(l["size"] for l in layers)
print(f"uncompressed: {rootfs_kb} KiB root file system (du -sk); buildah images: {listed}")
print(f"compressed: {len(layers)} layer(s), {compressed} bytes ({compressed / 1e6:.1f} MB), "
      f"{', '.join(l['mediaType'].rsplit('.', 1)[-1] for l in layers)}")
PY
echo "== image: passed in $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$started" "$(date +%s.%N)") s"
