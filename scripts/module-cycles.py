#!/usr/bin/env python3
"""Lists pairs of modules that import each other, in every crate of the workspace.

A module is one source file (`a/mod.rs` and `a.rs` are module `a`). Module M
imports N when M names a path into N (`use crate::n::..`, `super::n::..`, or an
inline `crate::n::f()`). A module and its own ancestors are not counted: a
parent re-exporting its children, and children using their parent's helpers,
is how Rust modules are built. Exits 1 when a pair is found.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates"
)
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def modules_of(src):
    mods = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            mods[tuple(parts)] = os.path.join(dirpath, f)
    return mods


def strip_comments(text):
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def expand(tree):
    """Expands a use tree `a::{b, c::{d, e}}` into paths."""
    tree = tree.strip()
    i = tree.find("{")
    if i < 0:
        return [tree.split(" as ")[0].strip()]
    head = tree[:i]
    body = tree[i + 1 : tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        if p.strip():
            out += [head + q for q in expand(p)]
    return out


def paths_in(text):
    text = strip_comments(text)
    paths = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        paths += expand(m.group(1))
    paths += re.findall(r"\b((?:crate|super|self)(?:::" + IDENT + r")+)", text)
    return paths


def resolve(path, here, is_dir_module, mods):
    segs = [s for s in re.split(r"\s*::\s*", path) if s]
    if not segs:
        return None
    base = list(here) if is_dir_module else list(here[:-1])
    if segs[0] == "crate":
        cur, segs = [], segs[1:]
    elif segs[0] == "self":
        cur, segs = list(here), segs[1:]
    elif segs[0] == "super":
        cur = base
        segs = segs[1:]
        while segs and segs[0] == "super":
            cur = cur[:-1]
            segs = segs[1:]
    else:
        return None
    best = tuple(cur)
    for s in segs:
        cur = cur + [s]
        if tuple(cur) in mods:
            best = tuple(cur)
        else:
            break
    return best


def main():
    found = []
    for crate in sorted(os.listdir(ROOT)):
        src = os.path.join(ROOT, crate, "src")
        if not os.path.isdir(src):
            continue
        mods = modules_of(src)
        edges = set()
        for mod, path in mods.items():
            is_dir = os.path.basename(path) in ("mod.rs", "lib.rs", "main.rs")
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            for p in paths_in(text):
                target = resolve(p, mod, is_dir, mods)
                if target is None or target == mod:
                    continue
                # Ancestors and descendants are one family.
                if mod[: len(target)] == target or target[: len(mod)] == mod:
                    continue
                edges.add((mod, target))
        for a, b in sorted(edges):
            if (b, a) in edges and a < b:
                found.append(f"{crate}: {'::'.join(a) or 'crate'} <-> {'::'.join(b) or 'crate'}")
    for f in found:
        print(f)
    if found:
        print(f"{len(found)} pair(s) of modules import each other")
        return 1
    print("no two modules import each other")
    return 0


if __name__ == "__main__":
    sys.exit(main())
