#!/usr/bin/env python3
"""Every relative link of every Markdown file of the repository leads
somewhere: the file or directory it names exists, and a #anchor (in the
same file or another .md) names a heading of that file as GitHub makes
anchors from headings (lowercase; punctuation other than '-' and '_'
dropped; each space a '-'; a repeated heading gets -1, -2, ...). http(s)
and mailto links are not followed (no verdict depends on the network).

Usage: check_links.py [ROOT]   (default: the repository holding this file)
Prints each dead link as FILE:LINE: and exits 1 if there is one."""

import os
import re
import subprocess
import sys
import unicodedata

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))

FENCE = re.compile(r"^ {0,3}(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
# [text](target) and ![alt](target), the target up to the first space or ')'
# (an optional "title" after it); reference definitions [id]: target.
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def markdown_files():
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "*.md"],
                             capture_output=True, text=True, check=True).stdout.split("\n")
        files = [f for f in out if f and os.path.isfile(os.path.join(ROOT, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(ROOT):
            dirs[:] = [x for x in dirs if x != ".git" and not x.startswith("build")]
            files += [os.path.relpath(os.path.join(d, n), ROOT) for n in names if n.endswith(".md")]
    return sorted(files)


def lines_outside_code(text):
    """(line number, line) of the lines that are not in a fenced code block."""
    fence = None
    for i, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is None:
            yield i, line


def heading_text(raw):
    """What GitHub renders of a heading's source: code spans keep their
    text, links their text, emphasis and images are dropped."""
    t = CODE_SPAN.sub(lambda m: m.group(2), raw)
    t = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", t)
    t = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", t)
    t = re.sub(r"<[^>]+>", "", t)
    t = re.sub(r"(\*\*|__|\*|_)(?=\S)(.+?)(?<=\S)\1", r"\2", t)
    return t


def slug(text):
    out = []
    for c in text.strip().lower():
        cat = unicodedata.category(c)
        if c == " ":
            out.append("-")
        elif c == "-" or cat[0] in "LMN" or cat == "Pc":
            out.append(c)
    return "".join(out)


def anchors(path, cache={}):
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        seen = {}
        found = set()
        for _, line in lines_outside_code(text):
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(heading_text(m.group(2)))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else "%s-%d" % (s, n))
        # Explicit HTML anchors (<a name="x"> / id="x") count too.
        found.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
        cache[path] = found
    return cache[path]


def links(text):
    for n, line in lines_outside_code(text):
        plain = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        for m in INLINE.finditer(plain):
            yield n, m.group(1)
        m = REFDEF.match(plain)
        if m:
            yield n, m.group(1)


def check(rel):
    path = os.path.join(ROOT, rel)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    dead = []
    for n, target in links(text):
        if not target or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            continue  # http:, https:, mailto:, file: ... are not followed
        file_part, _, anchor = target.partition("#")
        if file_part.startswith("/"):
            dead.append((n, target, "an absolute path: link relative to the file"))
            continue
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(dest):
            dead.append((n, target, "no such file: " + os.path.relpath(dest, ROOT)))
            continue
        if anchor and dest.endswith(".md") and os.path.isfile(dest):
            if anchor not in anchors(dest):
                dead.append((n, target, "no heading makes #%s in %s" %
                             (anchor, os.path.relpath(dest, ROOT))))
    return dead


def main():
    files = markdown_files()
    bad = 0
    for rel in files:
        for n, target, why in check(rel):
            print("%s:%d: dead link (%s): %s" % (rel, n, target, why))
            bad += 1
    if bad:
        print("%d dead link(s) in %d Markdown files" % (bad, len(files)))
        return 1
    print("links: every relative link and anchor resolves in %d Markdown files" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
