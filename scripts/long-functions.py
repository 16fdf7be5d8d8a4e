#!/usr/bin/env python3
"""Lists product functions longer than a limit, longest first.

A function runs from its `fn` line to the closing brace at the same indent
(rustfmt's layout). Test code is skipped: files that are test modules
(`tests/`, `testkit.rs`, files declared under `#[cfg(test)]` or
`#[cfg(any(test, ...))]`) and everything from such a line to the end of its
item.

    python3 scripts/long-functions.py [--limit N] [PATH ...]

PATH is a crate or a source folder (default: every crate's `src/`). Exits 1
when a function is longer than the limit (default 100 lines).
"""
import argparse
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")
# `#[cfg(test)]`, and `#[cfg(any(test, feature = "testsuite"))]` for test
# suites other crates run.
TEST_CFG = re.compile(r"#\[cfg\((?:test|any\(test\b.*)\)\]$")
FN = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")


def test_files(src):
    """Files and folders of modules declared under a test `cfg`."""
    out = set()
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            lines = open(os.path.join(dirpath, f), encoding="utf-8").read().split("\n")
            here = dirpath if f in ("mod.rs", "lib.rs", "main.rs") else os.path.join(dirpath, f[:-3])
            for i, line in enumerate(lines[1:], 1):
                m = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", line)
                if m and TEST_CFG.match(lines[i - 1].strip()):
                    out.add(os.path.normpath(os.path.join(here, m.group(1) + ".rs")))
                    out.add(os.path.normpath(os.path.join(here, m.group(1))) + os.sep)
    return out


def functions(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    skip_indent = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if skip_indent is not None:
            if line.startswith(skip_indent + "}") or (line.strip() and len(line) - len(line.lstrip()) < len(skip_indent)):
                skip_indent = None
            i += 1
            continue
        if TEST_CFG.match(line.strip()):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if nxt.rstrip().endswith(";"):
                i += 2
                continue
            skip_indent = re.match(r"\s*", nxt).group(0)
            i += 2
            continue
        m = FN.match(line)
        if m:
            indent = m.group(1)
            j = i
            # a declaration without a body (trait method) ends with `;`
            while j < len(lines) and not lines[j].rstrip().endswith("{") and not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                k = j + 1
                while k < len(lines) and lines[k] != indent + "}":
                    k += 1
                yield m.group(2), i + 1, k - i + 1
        i += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("paths", nargs="*")
    args = ap.parse_args()
    roots = args.paths or [os.path.join(ROOT, c, "src") for c in sorted(os.listdir(ROOT))]
    found = []
    for root in roots:
        if os.path.isdir(os.path.join(root, "src")):
            root = os.path.join(root, "src")
        tests = test_files(root)
        for dirpath, _, files in os.walk(root):
            for f in sorted(files):
                p = os.path.normpath(os.path.join(dirpath, f))
                in_test = p in tests or any(p.startswith(t) for t in tests if t.endswith(os.sep))
                if not f.endswith(".rs") or in_test or f == "testkit.rs" or "/tests/" in p:
                    continue
                for name, line, n in functions(p):
                    if n > args.limit:
                        found.append((n, f"{os.path.relpath(p)}:{line}", name))
    for n, where, name in sorted(found, reverse=True):
        print(f"{n:5} {where} {name}")
    print(f"{len(found)} function(s) longer than {args.limit} lines")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
