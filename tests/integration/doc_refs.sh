#!/usr/bin/env bash
# Design references in code and tests name this repository's docs and sections they
# have (doc_refs.py); no comment cites the upstream design file, which is not in the
# repository (its name is put together below, so this file does not cite it). The
# checker also fails on a file planted with a bad reference (so it can fail).
. "$(dirname "$0")/lib.sh"
UPSTREAM="DESIGN"".md"
check "no $UPSTREAM in Sources, Tests or tests" bash -c "! grep -rnF '$UPSTREAM' '$ROOT/Sources' '$ROOT/Tests' '$ROOT/tests' --include=*.swift --include=*.py --include=*.sh --include=*.js --exclude=doc_refs.py --exclude=doc_refs.sh"
check "every reference names a section its doc has" bash -c "python3 '$ROOT/tests/integration/doc_refs.py' '$ROOT' >'$OUT/doc-refs.log' 2>&1 || { cat '$OUT/doc-refs.log'; exit 1; }"
planted="$OUT/doc-refs-planted"; rm -rf "$planted"; mkdir -p "$planted"
printf '%s\n' '/// As docs/protocol.md, "No such section" says.' "/// As $UPSTREAM section 4 says." '/// As docs/nowhere.md, "X" says.' '/// Section 15: history.' '/// (docs/protocol.md, "Operations", 6 and 8)' >"$planted/Planted.swift"
check "...and it fails on a planted bad reference, naming each" bash -c \
    "! python3 '$ROOT/tests/integration/doc_refs.py' '$ROOT' '$planted' >'$OUT/doc-refs-planted.log' 2>&1 && grep -q 'no section \"No such section\"' '$OUT/doc-refs-planted.log' && grep -qF '$UPSTREAM' '$OUT/doc-refs-planted.log' && grep -q 'nowhere.md is not in the repository' '$OUT/doc-refs-planted.log' && grep -q 'Section 15\" names no document' '$OUT/doc-refs-planted.log' && grep -q 'numbers after a citation' '$OUT/doc-refs-planted.log'"
sed -n '$p' "$OUT/doc-refs.log" | sed 's/^/   /'
finish
