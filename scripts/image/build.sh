#!/usr/bin/env bash
# Builds Herald's OCI image from a binary, offline (the base is `scratch`).
#
#   scripts/image/build.sh [BINARY]     # default: target/dist/herald
#
# Stages the context with stage.sh into $CONTEXT (default target/image),
# then builds the repository's Containerfile with the first of buildah,
# podman and docker found (or $BUILDER), tagged $IMAGE:VERSION (IMAGE
# defaults to "herald"). VERSION and REVISION are read from the binary
# itself (`herald version`), so the labels describe what is inside even
# when the binary was built at another commit than the checkout's.
# Prints the image's tag on the last line of stdout.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BINARY=${1:-$REPO/target/dist/herald}
CONTEXT=${CONTEXT:-$REPO/target/image}
IMAGE=${IMAGE:-herald}

if [ ! -x "$BINARY" ]; then
    echo "build: no binary at $BINARY; build one with: cargo build --profile dist -p herald" >&2
    exit 1
fi

# "herald 0.1.0 (commit c38ef17dd777)"
VERSION_LINE=$("$BINARY" version)
VERSION=$(sed -nE 's/^herald ([^ ]+).*/\1/p' <<<"$VERSION_LINE")
REVISION=$(sed -nE 's/.*\(commit ([0-9a-f]+)\).*/\1/p' <<<"$VERSION_LINE")
if [ -z "$VERSION" ]; then
    echo "build: cannot read the version from '$VERSION_LINE'" >&2
    exit 1
fi
# The full commit id, where this checkout knows the short one.
if [ -n "$REVISION" ] && full=$(git -C "$REPO" rev-parse -q --verify "$REVISION^{commit}" 2>/dev/null); then
    REVISION=$full
fi
TAG="$IMAGE:$VERSION"

"$REPO/scripts/image/stage.sh" "$BINARY" "$CONTEXT"

BUILDER=${BUILDER:-}
if [ -z "$BUILDER" ]; then
    for b in buildah podman docker; do
        if command -v "$b" >/dev/null; then BUILDER=$b; break; fi
    done
fi
ARGS=(-f "$REPO/Containerfile" --build-arg "VERSION=$VERSION" --build-arg "REVISION=${REVISION:-unknown}" -t "$TAG")
echo "== $BUILDER: $TAG (version $VERSION, revision ${REVISION:-unknown})"
case "$BUILDER" in
    buildah) buildah bud "${ARGS[@]}" "$CONTEXT" ;;
    podman) podman build "${ARGS[@]}" "$CONTEXT" ;;
    docker) docker build "${ARGS[@]}" "$CONTEXT" ;;
    *)
        echo "build: none of buildah, podman or docker found (or BUILDER=$BUILDER unknown)" >&2
        exit 1
        ;;
esac
echo "$TAG"
