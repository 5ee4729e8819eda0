"""Transcripts in the docs, run as written: in a ``` block, each line `$ curl …` is
run against a fresh demo server (7420 made its port) and what it prints must be the
lines that follow it in the block, up to the next `$ ` line (JSON compared as values).

usage: transcripts.py DOC PORT"""
import json
import subprocess
import sys

from checks import check, finish

doc, port = sys.argv[1], sys.argv[2]
lines = open(doc).read().split("\n")
steps: list[tuple[str, list[str]]] = []
inside, current = False, None
for line in lines:
    if line.startswith("```"):
        inside, current = not inside, None
        continue
    if not inside:
        continue
    if line.startswith("$ "):
        current = (line[2:], [])
        steps.append(current)
    elif current is not None and line.strip():
        current[1].append(line)


def same(got, want):
    try:
        return json.loads(got) == json.loads(want)
    except ValueError:
        return got == want


for command, expected in steps:
    if not command.startswith("curl "):
        continue
    out = subprocess.run(command.replace("7420", port), shell=True, capture_output=True, text=True, timeout=30).stdout
    got = [x for x in out.split("\n") if x.strip()]
    ok = len(got) == len(expected) and all(same(g, w) for g, w in zip(got, expected))
    check(f"{doc.split('/')[-1]}: $ {command[:90]}", ok, f"printed {got!r}, the doc says {expected!r}")
finish("transcripts")
