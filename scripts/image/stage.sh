#!/usr/bin/env bash
# Stages the build context of Herald's OCI image from a binary.
#
#   scripts/image/stage.sh BINARY OUTDIR
#
# Writes OUTDIR/rootfs.tar, the image's whole root file system, which the
# repository's Containerfile adds to an empty (`FROM scratch`) image:
#
#   /usr/local/bin/herald            BINARY
#   the shared libraries `ldd BINARY` names, at the paths it names
#   (symbolic links resolved: each is a regular file)
#   /etc/passwd, /etc/group          root, and herald (uid/gid 10001)
#   /etc/nsswitch.conf, /etc/hosts   name lookups: files, then DNS
#   /data                            empty, owned by 10001:10001, mode 0700
#   /tmp                             empty, mode 1777
#   /usr/share/doc/...               Herald's licence and, where dpkg knows
#                                    the package of a library, its copyright
#
# Owners and modes are set in the archive itself (no root needed to stage),
# every file's time is SOURCE_DATE_EPOCH (0 by default) and entries are
# sorted, so the same inputs give the same archive. OUTDIR/rootfs.txt lists
# it. Needs bash, ldd, GNU tar and coreutils.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 BINARY OUTDIR" >&2
    exit 2
fi
BINARY=$1
OUTDIR=$2
REPO=$(cd "$(dirname "$0")/../.." && pwd)
HERALD_UID=10001
HERALD_GID=10001
EPOCH=${SOURCE_DATE_EPOCH:-0}

[ -x "$BINARY" ] || { echo "stage: $BINARY is not an executable file" >&2; exit 1; }
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/herald-stage.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
ROOT=$STAGE/root
SHARE=$STAGE/share
mkdir -p "$ROOT" "$SHARE"

# Directories and files owned by root.
install -d -m 0755 "$ROOT/usr/local/bin" "$ROOT/etc" "$ROOT/usr/share/doc/herald"
install -d -m 1777 "$ROOT/tmp"
install -m 0755 "$BINARY" "$ROOT/usr/local/bin/herald"
install -m 0644 "$REPO/LICENSE" "$ROOT/usr/share/doc/herald/LICENSE"

# The libraries the dynamic loader maps, as ldd resolves them on this host.
# A line is "name => /path (addr)", "/path (addr)" (the loader itself),
# "name (addr)" (the vDSO: no file) or "name => not found".
LDD_OUT=$(ldd "$BINARY" 2>&1) || true
if grep -q "not found" <<<"$LDD_OUT"; then
    echo "stage: ldd cannot resolve every library of $BINARY:" >&2
    echo "$LDD_OUT" >&2
    exit 1
fi
LIBS=()
if grep -Eq "not a dynamic executable|statically linked" <<<"$LDD_OUT"; then
    echo "stage: $BINARY is statically linked: no libraries to copy"
else
    while read -r lib; do
        LIBS+=("$lib")
    done < <(sed -nE 's@^[[:space:]]*([^[:space:]]+ => )?(/[^[:space:]]+) \(0x[0-9a-f]+\)$@\2@p' <<<"$LDD_OUT")
    if [ ${#LIBS[@]} -eq 0 ]; then
        echo "stage: found no library in ldd's answer:" >&2
        echo "$LDD_OUT" >&2
        exit 1
    fi
fi
for lib in "${LIBS[@]}"; do
    real=$(readlink -f "$lib")
    install -d -m 0755 "$ROOT$(dirname "$lib")"
    install -m 0755 "$real" "$ROOT$lib"
    # The package's copyright file, where dpkg can say which package it is.
    if command -v dpkg >/dev/null; then
        pkg=$( (dpkg -S "$real" 2>/dev/null || dpkg -S "$lib" 2>/dev/null) | head -n1 | cut -d: -f1) || true
        if [ -n "$pkg" ] && [ -f "/usr/share/doc/$pkg/copyright" ] && [ ! -e "$ROOT/usr/share/doc/$pkg" ]; then
            install -d -m 0755 "$ROOT/usr/share/doc/$pkg"
            install -m 0644 "/usr/share/doc/$pkg/copyright" "$ROOT/usr/share/doc/$pkg/copyright"
        fi
    fi
done

# Users, groups and name lookups. Container runtimes bind-mount their own
# /etc/hosts (and /etc/resolv.conf); this one serves a plain chroot.
printf '%s\n' \
    "root:x:0:0:root:/root:/sbin/nologin" \
    "herald:x:$HERALD_UID:$HERALD_GID:Herald:/data:/sbin/nologin" >"$ROOT/etc/passwd"
printf '%s\n' "root:x:0:" "herald:x:$HERALD_GID:" >"$ROOT/etc/group"
printf '%s\n' "passwd: files" "group: files" "hosts: files dns" >"$ROOT/etc/nsswitch.conf"
printf '%s\n' "127.0.0.1 localhost" "::1 localhost ip6-localhost ip6-loopback" >"$ROOT/etc/hosts"
chmod 0644 "$ROOT"/etc/*
chmod 0755 "$ROOT" "$ROOT/usr" "$ROOT/usr/local" "$ROOT/usr/share" "$ROOT/usr/share/doc"

# The volume, owned by herald: a named volume starts as a copy of it.
install -d -m 0700 "$SHARE/data"

TAR_COMMON=(--sort=name --mtime="@$EPOCH" --numeric-owner --format=gnu)
rm -f "$OUTDIR/rootfs.tar"
tar -cf "$OUTDIR/rootfs.tar" "${TAR_COMMON[@]}" --owner=0 --group=0 -C "$ROOT" .
tar -rf "$OUTDIR/rootfs.tar" "${TAR_COMMON[@]}" --owner="$HERALD_UID" --group="$HERALD_GID" -C "$SHARE" ./data
tar -tvf "$OUTDIR/rootfs.tar" >"$OUTDIR/rootfs.txt"

echo "staged $OUTDIR/rootfs.tar ($(du -k "$OUTDIR/rootfs.tar" | cut -f1) KiB):"
awk '$1 !~ /^d/ { printf "  %10s  %s\n", $3, $6 }' "$OUTDIR/rootfs.txt"
