#!/usr/bin/env bash
# Every shell command the README and docs show runs as written against a fresh demo
# server (scripts/demo's: the built-in demo flow and its `demo` session). Commands are
# taken from ```sh blocks: curl, and navclient's exec/get/sessions/delete; the port is
# the test server's instead of 7420. Each document starts from a fresh server.
. "$(dirname "$0")/lib.sh"

extract() {   # extract FILE: one command per line, continuations joined
    awk '
        /^[ ]*```/ { if (inb) { inb = 0 } else if ($0 ~ /```sh/) { inb = 1 }; next }
        inb {
            line = $0; sub(/^[ ]+/, "", line)
            if (cont != "") { line = cont " " line; cont = "" }
            if (line ~ /\\$/) { sub(/\\$/, "", line); cont = line; next }
            if (line ~ /^curl / || line ~ /^(\.build\/release\/)?navclient (exec|get|sessions|delete) /) print line
        }' "$1"
}

for doc in "$ROOT/README.md" "$ROOT"/docs/*.md; do
    name="$(basename "$doc" .md)"
    # backend.md's recipe needs its example backend beside the server: backend_docs.sh runs it.
    [ "$name" = backend ] && continue
    commands="$(extract "$doc")"
    [ -n "$commands" ] || continue
    start_navsyncd "docs-$name"
    port="$(echo "$WS_URL" | sed 's#.*:\([0-9]*\)/ws#\1#')"
    while IFS= read -r cmd; do
        run="${cmd//7420/$port}"
        run="${run//.build\/release\/navclient/$NAVCLIENT}"
        run="${run/#navclient /$NAVCLIENT }"
        # navclient without an address talks to 7420: give it the test server's.
        case "$run" in "$NAVCLIENT exec "*|"$NAVCLIENT get"*|"$NAVCLIENT sessions"*|"$NAVCLIENT delete "*)
            sub="${run#"$NAVCLIENT "}"; verb="${sub%% *}"; rest="${sub#"$verb"}"
            run="$NAVCLIENT $verb $port$rest" ;;
        esac
        check "$name: $cmd" bash -c "$run >'$OUT/docs-last.txt' 2>&1 && ! grep -q '\"type\":\"error\"' '$OUT/docs-last.txt'"
    done <<<"$commands"
    stop_navsyncd
done
start_navsyncd docs-exchange
py_checks "$ROOT/tests/integration/docs_exchange.py" "$ROOT/docs/protocol.md" "$WS_URL"
stop_navsyncd
finish
