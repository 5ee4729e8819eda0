"""Every design reference in code and tests names a file of this repository and a
section it has: `docs/protocol.md, "Operations"` (more sections: `and "History"`).
No comment cites the upstream design file (not in the repository: its name is built
below, `UPSTREAM`), a "Section N" on a line that names no RFC, or numbers left after a
citation (`docs/protocol.md, "Operations", 6 and 8`: which document's 6?).

usage: doc_refs.py ROOT [PATH ...]   (PATHs: files or folders to check; default
Sources, Tests and tests). Exit 1 and each bad reference printed when there is one."""
import os
import re
import sys

ROOT = sys.argv[1]
PATHS = sys.argv[2:] or [os.path.join(ROOT, p) for p in ("Sources", "Tests", "tests")]
CITATION = re.compile(r'((?:docs/[a-z-]+|README)\.md), ((?:"[^"]+"(?:,? and |, )?)+)')
HEADING = re.compile(r'"([^"]+)"')
UPSTREAM = "DESIGN" + ".md"
BARE = re.compile(r"\b(?:" + re.escape(UPSTREAM) + r"|[Ss]ections? \d+(?:\.\d+)*)")
LEFT_OVER = re.compile(r"\s*(?:(?:,|and|[–-])\s*)?\d")


def headings(doc):
    path = os.path.join(ROOT, doc)
    if not os.path.isfile(path):
        return None
    return {line.lstrip("#").strip().replace("`", "") for line in open(path) if line.startswith("#")}


def files():
    for p in PATHS:
        if os.path.isfile(p):
            yield p
        for root, _, names in os.walk(p):
            for n in names:
                if n.endswith((".swift", ".py", ".sh", ".js", ".h")) and n not in ("doc_refs.py", "doc_refs.sh"):
                    yield os.path.join(root, n)


bad, cited = [], 0
cache = {}
for path in files():
    for number, line in enumerate(open(path, errors="replace"), 1):
        where = f"{os.path.relpath(path, ROOT)}:{number}"
        for m in CITATION.finditer(line):
            doc = m.group(1)
            if doc not in cache:
                cache[doc] = headings(doc)
            if cache[doc] is None:
                bad.append(f"{where}: {doc} is not in the repository")
                continue
            # The first quoted name is the section; more after "and" are sections too.
            names = HEADING.findall(m.group(2))
            sections = [names[0]] + [n for n, sep in zip(names[1:], re.findall(r'"(?:,? and |, )', m.group(2))) if "and" in sep]
            for name in sections:
                cited += 1
                if name not in cache[doc]:
                    bad.append(f"{where}: {doc} has no section \"{name}\"")
            if LEFT_OVER.match(line, m.end()):
                bad.append(f"{where}: numbers after a citation of {doc} name no section of it")
        if "RFC" not in line and "rfc" not in line:
            for m in BARE.finditer(line):
                bad.append(f"{where}: \"{m.group(0)}\" names no document of this repository")
for b in bad:
    print(b)
print(f"{cited} references to sections of the docs checked, {len(bad)} bad")
sys.exit(1 if bad else 0)
