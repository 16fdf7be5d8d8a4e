#!/usr/bin/env python3
"""Checks that every relative link in the repository's Markdown files resolves.

For each `[text](target)` and `![alt](target)` outside code (fenced blocks
and inline code spans), in every tracked `*.md` file: a relative path must
name an existing file or directory, and a `#anchor` (on its own, or after a
path to a Markdown file) must be the slug of a heading in that file, made as
GitHub makes it. Links with a scheme (`https:`, `mailto:`) are not fetched.
Prints each broken link as FILE:LINE and exits 1 when there is one.

    python3 scripts/check-links.py
"""
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"(`{3,}|~{3,})")
HTML_ID = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def markdown_files():
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "*.md"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return sorted(set(p for p in out.splitlines() if p and os.path.exists(os.path.join(ROOT, p))))


def prose_lines(text):
    """(line number, line) outside fenced code blocks, inline code blanked."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip()
        m = FENCE.match(stripped)
        if m and (fence is not None or "`" not in stripped[len(m.group(1)):]):
            if fence is None:
                fence = m.group(1)
                continue
            if stripped.startswith(fence) and not stripped[len(m.group(1)):].strip():
                fence = None
                continue
        if fence is None:
            yield n, re.sub(r"(`+)(?:(?!\1).)+?\1", lambda c: " " * len(c.group(0)), line)


def slug(heading):
    text = re.sub(r"<[^>]+>", "", heading)                       # inline HTML
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)        # links keep their text
    text = text.replace("`", "").strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        with open(path, encoding="utf-8") as f:
            text = f.read()
        fence = None
        for line in text.split("\n"):
            stripped = line.lstrip()
            m = FENCE.match(stripped)
            if m and (fence is not None or "`" not in stripped[len(m.group(1)):]):
                if fence is None:
                    fence = m.group(1)
                    continue
                if stripped.startswith(fence) and not stripped[len(m.group(1)):].strip():
                    fence = None
                    continue
            if fence is not None:
                continue
            h = HEADING.match(line)
            if h:
                s = slug(h.group(2))
                k = seen.get(s, 0)
                seen[s] = k + 1
                found.add(s if k == 0 else f"{s}-{k}")
            found.update(HTML_ID.findall(line))
        cache[path] = found
    return cache[path]


def main():
    broken = []
    files = markdown_files()
    for rel in files:
        src = os.path.join(ROOT, rel)
        with open(src, encoding="utf-8") as f:
            text = f.read()
        for n, line in prose_lines(text):
            for target in LINK.findall(line):
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
                    continue
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(src), path)) if path else src
                if path.startswith("/"):
                    broken.append(f"{rel}:{n}: {target}: an absolute path; link relative to the file")
                    continue
                if not os.path.exists(dest):
                    broken.append(f"{rel}:{n}: {target}: no such file")
                    continue
                if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    broken.append(f"{rel}:{n}: {target}: no heading #{anchor} in {os.path.relpath(dest, ROOT)}")
    for b in broken:
        print(b)
    print(f"check-links: {len(files)} Markdown files, {len(broken)} broken link(s)", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
