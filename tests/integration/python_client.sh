#!/usr/bin/env bash
# The Python package (clients/python), installed as a user would (pip install
# ./clients/python into the venv), then its own tests through its pytest plugin: the
# mirror and resend with a fake transport, a real navsyncd (two sessions, navclient, a
# restart with --data mid-command, errors, a dead URL) and docs/python.md's examples.
. "$(dirname "$0")/lib.sh"

check "pip install ./clients/python" bash -c "'$ROOT/.venv/bin/pip' install -q '$ROOT/clients/python' >'$OUT/pip-navsync.log' 2>&1"
check "import navsync from outside the checkout" bash -c "cd /tmp && '$PY' -c 'import navsync, navsync.sync, navsync.pytest_plugin; assert navsync.__version__'"
check "mypy --strict is clean over clients/python (the package and its tests)" bash -c "cd '$ROOT/clients/python' && '$PY' -m mypy --strict navsync tests >'$OUT/mypy-package.log' 2>&1 || { cat '$OUT/mypy-package.log'; exit 1; }"
examples="$OUT/python-doc-examples"; rm -rf "$examples"; mkdir -p "$examples"
awk -v dir="$examples" '/^```python/ { n++; inb = 1; next } inb && /^```/ { inb = 0; next } inb { print > (dir "/example" n ".py") }' "$ROOT/docs/python.md"
check "...and over docs/python.md's examples (as a user's code would import it)" bash -c "cd /tmp && '$PY' -m mypy --strict '$examples' >'$OUT/mypy-examples.log' 2>&1 || { cat '$OUT/mypy-examples.log'; exit 1; }"
check "its tests pass (pytest, the plugin starting navsyncd)" bash -c "cd /tmp && NAVSYNCD='$NAVSYNCD' NAVCLIENT='$NAVCLIENT' '$PY' -m pytest -q -p no:cacheprovider '$ROOT/clients/python/tests' >'$OUT/pytest-navsync.log' 2>&1 || { tail -40 '$OUT/pytest-navsync.log'; exit 1; }"

# As a new user would: a fresh venv, the package from the checkout (its dependencies
# from PyPI), and docs/python.md's QA script exactly as written, its port made this
# server's.
start_navsyncd python-docs
port="$(echo "$WS_URL" | sed 's#.*:\([0-9]*\)/ws#\1#')"
fresh="$OUT/fresh-venv"; rm -rf "$fresh"
check "a fresh venv takes pip install ./clients/python" bash -c "python3 -m venv '$fresh' && '$fresh/bin/pip' install -q '$ROOT/clients/python' >'$OUT/fresh-pip.log' 2>&1"
awk '/^```python/ { n++; inb = (n == 1); next } inb && /^```/ { exit } inb' "$ROOT/docs/python.md" | sed "s/7420/$port/g" >"$OUT/qa_example.py"
check "docs/python.md's QA script runs as written" bash -c "cd /tmp && '$fresh/bin/python' '$OUT/qa_example.py' | grep -q 'checkout reached at revision'"
stop_navsyncd
finish
