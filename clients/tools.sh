# Sourced by clients/generate.sh and scripts/ci/clients.sh: puts the pinned
# generators (and what the clients' tests need) in place, installing them
# once into caches kept between runs on the same machine:
#
#   ~/.cache/herald-clients-py-<hash of requirements-generate.txt>-<python>
#       a venv with openapi-python-client, ruff, httpx and attrs;
#   ~/.cache/herald-clients-node-<hash of package.json and package-lock.json>
#       `npm ci` of clients/typescript (openapi-typescript, openapi-fetch,
#       typescript, @types/node), linked as clients/typescript/node_modules.
#
# A cache is used only once its install finished (a `.complete` file), so an
# interrupted install is redone rather than trusted. A new pin names a new
# cache directory. HERALD_CLIENTS_CACHE moves them (default ~/.cache).

HERALD_CLIENTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HERALD_CLIENTS_CACHE="${HERALD_CLIENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}}"

# A Python of 3.11 or later (the generated code uses typing.Self and
# enum.StrEnum): python3 if it is one, else the newest pyenv has.
herald_clients_pick_python() {
    local p
    for p in python3 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[1-9]*/bin/python3; do
        if command -v "$p" >/dev/null 2>&1 &&
            "$p" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    echo "clients: no Python 3.11 or later (python3 or pyenv)" >&2
    return 1
}

herald_clients_hash() {
    cat "$@" | sha256sum | cut -c1-12
}

# Sets HERALD_CLIENTS_VENV; its bin/ holds openapi-python-client and ruff.
herald_clients_python_tools() {
    local reqs="$HERALD_CLIENTS_DIR/python/requirements-generate.txt" py ver
    py="$(herald_clients_pick_python)" || return 1
    ver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    HERALD_CLIENTS_VENV="$HERALD_CLIENTS_CACHE/herald-clients-py-$(herald_clients_hash "$reqs")-$ver"
    if [ ! -e "$HERALD_CLIENTS_VENV/.complete" ]; then
        echo "clients: installing the pinned Python tools into $HERALD_CLIENTS_VENV" >&2
        rm -rf "$HERALD_CLIENTS_VENV"
        mkdir -p "$HERALD_CLIENTS_CACHE"
        "$py" -m venv "$HERALD_CLIENTS_VENV" || return 1
        "$HERALD_CLIENTS_VENV/bin/pip" install --quiet --disable-pip-version-check \
            -r "$reqs" || return 1
        touch "$HERALD_CLIENTS_VENV/.complete"
    fi
}

# Sets HERALD_CLIENTS_NODE_MODULES and links clients/typescript/node_modules
# to it (a real node_modules directory a developer made is left alone).
herald_clients_node_tools() {
    local ts="$HERALD_CLIENTS_DIR/typescript" dir
    if ! command -v npm >/dev/null 2>&1; then
        echo "clients: npm not found (Node 20 or later is needed)" >&2
        return 1
    fi
    dir="$HERALD_CLIENTS_CACHE/herald-clients-node-$(herald_clients_hash "$ts/package.json" "$ts/package-lock.json")"
    if [ ! -e "$dir/.complete" ]; then
        echo "clients: installing the pinned npm packages into $dir" >&2
        rm -rf "$dir"
        mkdir -p "$dir"
        cp "$ts/package.json" "$ts/package-lock.json" "$dir/"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || return 1
        touch "$dir/.complete"
    fi
    HERALD_CLIENTS_NODE_MODULES="$dir/node_modules"
    if [ -L "$ts/node_modules" ] || [ ! -e "$ts/node_modules" ]; then
        ln -sfn "$HERALD_CLIENTS_NODE_MODULES" "$ts/node_modules"
    fi
}
