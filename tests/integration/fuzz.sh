#!/usr/bin/env bash
# The fuzz harness stays built and sound (scripts/fuzz, fuzz/FuzzTarget.swift): it is
# built from this checkout as it is (every source of the pure targets, whatever the
# layout), then run for a few seconds over the checked-in seeds of fuzz/corpus, the
# backend's inputs among them. A split, a rename or a new parser that breaks the build
# fails here, not months later. FUZZ_SECONDS: how long (10).
. "$(dirname "$0")/lib.sh"
cd "$ROOT"

check "scripts/fuzz builds the target from this checkout" bash -c "scripts/fuzz --build >'$OUT/fuzz-build.log' 2>&1"
run() {
    rm -rf "$OUT/fuzz-new" && mkdir -p "$OUT/fuzz-new" "$OUT/fuzz-crashes"
    .build/fuzz/navsync-fuzz -max_total_time="${FUZZ_SECONDS:-10}" -max_len=4096 -artifact_prefix="$OUT/fuzz-crashes/" \
        "$OUT/fuzz-new" fuzz/corpus >"$OUT/fuzz-run.log" 2>&1
    local rc=$?
    grep -E "^#[0-9]+ *DONE|stat::number_of_executed_units|Done [0-9]+ runs" "$OUT/fuzz-run.log" | tail -1
    return $rc
}
check "...and runs ${FUZZ_SECONDS:-10} s over fuzz/corpus (hooks file, hook answers, webhook events, frames, requests…) without a crash" run
echo "   $(grep -E 'Done [0-9]+ runs' "$OUT/fuzz-run.log" | tail -1)"
finish
