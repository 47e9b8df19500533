#!/bin/sh
# replay --at and GET /v1/state?at= outside the log (issue 27, item 3): a
# time before the first event gives the empty state, a time after the last
# event or a seq past it the latest, exit 0 either way, and stderr says
# which, naming that event; the server answers the same state with a
# Warning header in the same words (in the head even when the state is
# larger than a chunk), and refuses a seq it has not seen, as before.
# Inside the log nothing is said.
# Usage: tests/at_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
pass=0
fail=0
. "$root/tests/lib/cli.sh"
trap 'stop_server; rm -rf "$tmp"' EXIT
need_cmds at_cli curl

# no_line NAME FILE REGEX: FILE has no line matching REGEX.
no_line() {
	if grep -Eq -- "$3" "$2"; then bad "$1: $(grep -E -- "$3" "$2" | head -c 300)"; else ok; fi
}

db=$tmp/db
"$bin" import --db "$db" --create <"$root/tests/query/base.ndjson" >/dev/null
first='seq 1 at 2026-03-01T08:00:00.000000000Z'
last='seq 37 at 2026-03-02T20:00:00.000000000Z'
run "$bin" replay --db "$db" --json
cp "$tmp/out" "$tmp/latest"
run "$bin" replay --db "$db" --at 0 --json
cp "$tmp/out" "$tmp/empty"

# at WANT_NOTE... : replay --at $1 (json and text) exits 0; stderr is the
# note (or nothing), stdout the state of $2 (latest, empty, or none).
at() {
	a=$1 state=$2 note=$3
	run "$bin" replay --db "$db" --at "$a" --json
	expect "replay --at $a" 0
	if [ -n "$note" ]; then
		has "replay --at $a: says so" "$tmp/err" \
			"^gpuledger: replay: --at $a $note\$"
		[ "$(wc -l <"$tmp/err")" -eq 1 ] && ok ||
			bad "replay --at $a: $(wc -l <"$tmp/err") lines on stderr"
	else
		[ -s "$tmp/err" ] && bad "replay --at $a: stderr $(head -c 200 "$tmp/err")" || ok
	fi
	[ "$state" = none ] || same "replay --at $a: the $state state" \
		"$tmp/$state" "$tmp/out"
	# The table says it too.
	run "$bin" replay --db "$db" --at "$a"
	expect "replay --at $a (text)" 0
	if [ -n "$note" ]; then
		has "replay --at $a (text): says so" "$tmp/err" "--at $a $note\$"
	else
		[ -s "$tmp/err" ] && bad "replay --at $a (text): stderr" || ok
	fi
}
before="is before the first event \\($first\\); the state is empty"
after="is after the last event \\($last\\); the state is the latest"
at 2020-01-01T00:00:00Z empty "$before"
at 2026-03-01 empty "$before"
at 2026-03-01T07:59:59.999999999Z empty "$before"
at 1970-01-01 empty "$before"
at 2026-03-01T08:00:00Z none ""
at 2026-03-02T09:00:00Z none ""
at 2026-03-02T20:00:00Z latest ""
at 2026-03-02T21:00:00+01:00 latest ""
at 2026-03-02T20:00:00.000000001Z latest "$after"
at 2027-01-01 latest "$after"
at 2262-04-11T23:47:16.854775807Z latest "$after"
at 38 latest "$after"
at 999999 latest "$after"
at 37 latest ""
at 0 empty ""
at 1 none ""
# Bad values are still errors (exit 2), eval still refuses a seq past the
# last.
for a in yesterday -1 2026-13-01 1969-12-31 10000000000000000000000; do
	run "$bin" replay --db "$db" --at "$a"
	expect "replay --at $a" 2
	has "replay --at $a: names it" "$tmp/err" "^gpuledger: replay: --at \""
done
printf '%s\n' '{"function":"Remaining","input":{"namespace":"tenant-acme"}}' >"$tmp/rem"
run "$bin" eval --db "$db" --at 38 <"$tmp/rem"
expect "eval --at past the last seq" 2
has "eval --at 38: says so" "$tmp/err" 'eval: --at 38 is past the last seq 37'
run "$bin" eval --db "$db" --at 2027-01-01 <"$tmp/rem"
expect "eval --at after the last event" 0
# A ledger with no event at all.
"$bin" import --db "$tmp/none" --create </dev/null >/dev/null
run "$bin" replay --db "$tmp/none" --at 2026-01-01 --json
expect "empty ledger: replay --at a time" 0
has "empty ledger: says so" "$tmp/err" '^gpuledger: replay: --at 2026-01-01 finds no event: the ledger is empty, and so is the state$'
run "$bin" replay --db "$tmp/none" --at 0 --json
[ -s "$tmp/err" ] && bad "empty ledger: --at 0 says something" || ok

# The server: the same state, and the note as a Warning.
start_server
# hstate AT WANT_STATUS STATE NOTE: GET /v1/state?at=AT.
hstate() {
	code=$(curl -s -D "$tmp/headers" -o "$tmp/body" -w '%{http_code}' \
		"http://127.0.0.1:$port/v1/state?at=$1")
	[ "$code" = "$2" ] && ok || bad "state?at=$1: HTTP $code, want $2"
	if [ -n "$4" ]; then
		has "state?at=$1: a Warning" "$tmp/headers" \
			"^Warning: 199 gpuledger \"at=$1 $4\""
	else
		no_line "state?at=$1: no Warning" "$tmp/headers" '^Warning'
	fi
	if [ "$3" != none ]; then
		printf '\n' >>"$tmp/body"
		same "state?at=$1: the $3 state, as replay" "$tmp/$3" "$tmp/body"
	fi
}
hstate 2020-01-01T00:00:00Z 200 empty "$before"
hstate 2027-01-01 200 latest "$after"
hstate 2026-03-02T20:00:00.000000001Z 200 latest "$after"
hstate 2026-03-02T20:00:00Z 200 latest ""
hstate 2026-03-01T08:00:00Z 200 none ""
hstate 37 200 latest ""
hstate 0 200 empty ""
hstate 38 400 none ""
has "state?at=38: says why" "$tmp/body" '^\{"error":"at: 38 is past the last seq 37"\}'
hstate yesterday 400 none ""
has "state?at=yesterday: says why" "$tmp/body" '^\{"error":"at: \\"yesterday\\" is not a seq, and is not an RFC 3339'
# The CLI's note and the server's Warning are the same words.
run "$bin" replay --db "$db" --at 2027-01-01 --json
cli=$(sed -n 's/^gpuledger: replay: --at 2027-01-01 //p' "$tmp/err")
curl -s -D "$tmp/headers" -o /dev/null "http://127.0.0.1:$port/v1/state?at=2027-01-01"
http=$(sed -n 's/^Warning: 199 gpuledger "at=2027-01-01 \(.*\)"\r$/\1/p' "$tmp/headers")
[ -n "$cli" ] && [ "$cli" = "$http" ] && ok || bad "CLI '$cli', HTTP '$http'"
stop_server

# A state larger than the stream queue (256 KiB): the Warning is known
# before the body, so it is in the head, which HTTP/1.0 (no trailers)
# shows.
"$bin" simulate --seed 3 --events 6000 --tenants 2000 --out "$tmp/sim.ndjson"
"$bin" watch --db "$tmp/sim" --from "$tmp/sim.ndjson" >/dev/null 2>&1
db=$tmp/sim
start_server
curl -s --http1.0 -D "$tmp/headers" -o "$tmp/body" \
	"http://127.0.0.1:$port/v1/state?at=2020-01-01"
has "big state, before: a Warning in the head" "$tmp/headers" '^Warning: 199 gpuledger "at=2020-01-01 is before the first event'
curl -s --http1.0 -D "$tmp/headers" -o "$tmp/body" \
	"http://127.0.0.1:$port/v1/state?at=2099-01-01"
[ "$(wc -c <"$tmp/body")" -gt 1000000 ] && ok || bad "the state is only $(wc -c <"$tmp/body") bytes"
has "big state, after: a Warning in the head" "$tmp/headers" '^Warning: 199 gpuledger "at=2099-01-01 is after the last event'
stop_server

echo "at_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
