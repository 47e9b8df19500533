#!/bin/sh
# Integration test of `gpuledger watch --from FIFO` (issue 27): a live pipe
# is a live ledger. The real binary reads a FIFO whose writer (this shell)
# stays open; what it has read must be in the ledger while the writer
# pauses, line for line, in every parse-thread configuration and with the
# default batching: each check polls `gpuledger log` (and once serve's
# /v1/events) in a bounded loop until it shows exactly the events of the
# lines written so far, which a `watch --from FILE` of those lines gives
# (without its end of stream: NOTE Synced and TICK). Closing the writer
# ends the stream, and the whole log and chain head are then those of the
# same lines read from a file. Failure paths: a partial line is not taken
# before its newline, an over-long line is the usual NOTE Oversized even
# when it arrives in pieces, a writer that closes mid-line leaves what a
# file without its last newline leaves, a restart on a FIFO is refused
# (without waiting for a writer), SIGTERM while the input pauses commits
# and exits 0, and --idle-ms is bounded.
# Usage: tests/pipe_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
dir=$(dirname "$0")/ingest
tmp=$(mktemp -d)
pass=0
fail=0
. "$(dirname "$0")/lib/cli.sh"
need_cmds pipe_cli curl jq timeout
classes=$dir/classes.json
stream=$dir/acme.ndjson
watch_pid=
cleanup() {
	[ -n "$watch_pid" ] && kill -9 "$watch_pid" 2>/dev/null
	stop_server
	exec 3>&- 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# want_file NAME FILE OPTS...: the log a `watch --from FILE` gives, in
# $tmp/NAME.want, and without its end of stream in $tmp/NAME.part; its
# verify output (the chain head) in $tmp/NAME.verify.
want_file() {
	wf_name=$1 wf_file=$2
	shift 2
	rm -rf "$tmp/$wf_name.db"
	"$bin" watch --db "$tmp/$wf_name.db" --from "$wf_file" \
		--classes "$classes" "$@" >/dev/null 2>&1 ||
		bad "$wf_name: watch --from FILE failed"
	"$bin" log --db "$tmp/$wf_name.db" >"$tmp/$wf_name.want"
	"$bin" verify --db "$tmp/$wf_name.db" >"$tmp/$wf_name.verify" 2>&1
	grep -v -e '"type":"TICK"' -e '"code":"Synced"' "$tmp/$wf_name.want" \
		>"$tmp/$wf_name.part"
}
# lines A B: lines A..B of the stream.
lines() { sed -n "$1,$2p" "$stream"; }

# start_watch NAME OPTS...: a FIFO $tmp/NAME.fifo held open for writing
# on fd 3 (read-write, so that opening never waits and a dead reader never
# blocks a write), and `watch --from` it into $tmp/NAME.db in the
# background ($watch_pid; its status goes to $tmp/NAME.rc when it ends).
start_watch() {
	sw_name=$1
	shift
	rm -f "$tmp/$sw_name.fifo" "$tmp/$sw_name.rc" "$tmp/$sw_name.pid"
	mkfifo "$tmp/$sw_name.fifo"
	exec 3<>"$tmp/$sw_name.fifo"
	(
		exec 3>&-
		"$bin" watch --db "$tmp/$sw_name.db" --from "$tmp/$sw_name.fifo" \
			--classes "$classes" "$@" \
			>"$tmp/$sw_name.out" 2>"$tmp/$sw_name.err" &
		echo $! >"$tmp/$sw_name.pid"
		wait $!
		echo $? >"$tmp/$sw_name.rc"
	) &
	wait_until 10 test -s "$tmp/$sw_name.pid"
	watch_pid=$(cat "$tmp/$sw_name.pid")
}
# end_watch NAME: closes the writer and waits (bounded) for the watcher's
# status in $wrc.
end_watch() {
	exec 3>&-
	if wait_until 30 test -s "$tmp/$1.rc"; then
		wrc=$(cat "$tmp/$1.rc")
	else
		bad "$1: watch did not end after the writer closed"
		kill -9 "$watch_pid" 2>/dev/null
		wrc=none
	fi
	watch_pid=
}
# log_is DB WANT: `gpuledger log` of DB is WANT, byte for byte.
log_is() {
	"$bin" log --db "$1" >"$tmp/got.log" 2>/dev/null && cmp -s "$2" "$tmp/got.log"
}
# shows NAME DB WANT: polls (bounded) until DB's log is WANT; reports it.
# After a first failure the bound is short, so that a broken build (or a
# mutation) fails in seconds rather than minutes.
patience=20
shows() {
	wait_until $patience log_is "$2" "$3" || patience=2
	"$bin" log --db "$2" >"$tmp/got.log" 2>/dev/null
	same "$1" "$3" "$tmp/got.log"
}

# --- lines are taken and committed while the writer stays open -------------
# Parse threads 1 (the default, with the default batch of 10000 events),
# none, and 3; with --batch 1 as well. The first line comes alone, without a
# following one; then four at once; then the rest, and the writer closes.
lines 1 1 >"$tmp/l1.ndjson"
lines 1 5 >"$tmp/l5.ndjson"
want_file l1 "$tmp/l1.ndjson"
want_file l5 "$tmp/l5.ndjson"
want_file all "$stream"
for cfg in "1" "0 --batch 1" "0" "3" "1 --batch 1"; do
	set -- $cfg
	th=$1
	shift
	name=live$th$(printf %s "$*" | tr -d ' -')
	start_watch "$name" --parse-threads "$th" "$@"
	lines 1 1 >&3
	shows "$name: a single line is taken" "$tmp/$name.db" "$tmp/l1.part"
	lines 2 5 >&3
	shows "$name: four more" "$tmp/$name.db" "$tmp/l5.part"
	lines 6 15 >&3
	end_watch "$name"
	[ "$wrc" = 0 ] && ok || bad "$name: exit $wrc ($(head -c 300 "$tmp/$name.err"))"
	"$bin" log --db "$tmp/$name.db" >"$tmp/$name.log"
	same "$name: the whole log is the file's" "$tmp/all.want" "$tmp/$name.log"
	"$bin" verify --db "$tmp/$name.db" >"$tmp/$name.verify" 2>&1
	same "$name: the same chain head" "$tmp/all.verify" "$tmp/$name.verify"
	has "$name: summary" "$tmp/$name.out" '^watch: 15 lines, '
done

# --- serve answers from a ledger a FIFO is feeding -------------------------
# events_upto N: serve's /v1/events ends at seq N (in $tmp/events.json).
events_upto() {
	curl -s "http://127.0.0.1:$port/v1/events?from=1&limit=1000" >"$tmp/events.json" &&
		grep -q "\"lastSeq\":$1[,}]" "$tmp/events.json" &&
		[ "$(jq '.events | length' "$tmp/events.json")" = "$1" ]
}
start_watch served
lines 1 5 >&3
shows "served: five lines" "$tmp/served.db" "$tmp/l5.part"
db=$tmp/served.db
start_server
n5=$(wc -l <"$tmp/l5.part" | tr -d ' ')
nall=$(wc -l <"$tmp/all.part" | tr -d ' ')
events_upto "$n5" && ok || bad "served: /v1/events does not end at seq $n5: $(head -c 300 "$tmp/events.json")"
lines 6 15 >&3
wait_until 20 events_upto "$nall"
events_upto "$nall" && ok || bad "served: /v1/events does not follow the pipe to seq $nall: $(head -c 300 "$tmp/events.json")"
stop_server
end_watch served
[ "$wrc" = 0 ] && ok || bad "served: exit $wrc"

# --- a partial line waits for its newline -----------------------------------
# Line 1 and the first half of line 2 in one write (well under PIPE_BUF,
# so the watcher reads both before it pauses): once line 1 is committed the
# half line must not be, however often the log is read; its rest completes
# it.
l2=$(lines 2 2)
half=$(printf %s "$l2" | head -c 100)
rest=$(printf %s "$l2" | tail -c +101)
lines 1 2 >"$tmp/l2.ndjson"
want_file l2 "$tmp/l2.ndjson"
for th in 0 1; do
	name=partial$th
	start_watch "$name" --parse-threads "$th"
	{ lines 1 1; printf %s "$half"; } >"$tmp/chunk"
	cat "$tmp/chunk" >&3
	shows "$name: the complete line is taken" "$tmp/$name.db" "$tmp/l1.part"
	for i in 1 2 3; do
		"$bin" log --db "$tmp/$name.db" >"$tmp/got.log"
		same "$name: the half line is not taken ($i)" "$tmp/l1.part" "$tmp/got.log"
	done
	printf '%s\n' "$rest" >&3
	shows "$name: its newline completes it" "$tmp/$name.db" "$tmp/l2.part"
	end_watch "$name"
	[ "$wrc" = 0 ] && ok || bad "$name: exit $wrc"
	"$bin" log --db "$tmp/$name.db" >"$tmp/$name.log"
	same "$name: the whole log is the file's" "$tmp/l2.want" "$tmp/$name.log"
done

# --- an over-long line, in pieces -----------------------------------------
# 3000 bytes over a bound of 1000, half before a pause, half after: one NOTE
# Oversized of 3000 bytes, as from a file, and the lines around it.
xs=$(head -c 1500 /dev/zero | tr '\0' x)
{ lines 1 1; printf '%s%s\n' "$xs" "$xs"; lines 2 2; } >"$tmp/long.ndjson"
want_file long "$tmp/long.ndjson" --max-object-bytes 1000
has "long: the file's log notes it" "$tmp/long.want" '"code":"Oversized".*3000 bytes'
for th in 0 1; do
	name=long$th
	start_watch "$name" --parse-threads "$th" --max-object-bytes 1000
	{ lines 1 1; printf %s "$xs"; } >"$tmp/chunk"
	cat "$tmp/chunk" >&3
	shows "$name: the line before it" "$tmp/$name.db" "$tmp/l1.part"
	{ printf '%s\n' "$xs"; lines 2 2; } >&3
	shows "$name: NOTE Oversized and the line after it" "$tmp/$name.db" "$tmp/long.part"
	end_watch "$name"
	[ "$wrc" = 0 ] && ok || bad "$name: exit $wrc"
	"$bin" log --db "$tmp/$name.db" >"$tmp/$name.log"
	same "$name: the whole log is the file's" "$tmp/long.want" "$tmp/$name.log"
done

# --- the writer closes mid-line -----------------------------------------------
# The half line is the stream's last line, as in a file without its last
# newline: a NOTE MalformedLine, then the end of the stream.
{ lines 1 1; printf %s "$half"; } >"$tmp/cut.ndjson"
want_file cut "$tmp/cut.ndjson"
has "cut: the file's log notes the half line" "$tmp/cut.want" '"code":"MalformedLine"'
for th in 0 1; do
	name=cut$th
	start_watch "$name" --parse-threads "$th"
	cat "$tmp/cut.ndjson" >&3
	shows "$name: the complete line is taken" "$tmp/$name.db" "$tmp/l1.part"
	end_watch "$name"
	[ "$wrc" = 0 ] && ok || bad "$name: exit $wrc"
	"$bin" log --db "$tmp/$name.db" >"$tmp/$name.log"
	same "$name: the whole log is the file's" "$tmp/cut.want" "$tmp/$name.log"
done

# --- a restart on a FIFO is refused, without waiting for a writer ---------
# (No writer holds the FIFO now: opening it would wait.)
run timeout 20 "$bin" watch --db "$tmp/live1.db" --from "$tmp/live1.fifo" --classes "$classes"
expect "restart on a FIFO" 2
has "restart on a FIFO: says why" "$tmp/err" 'not a regular file.*cannot be resumed; use a new --db'
# The same bytes as a regular file at that path are what the ledger read:
# it goes on from there, adding nothing.
rm -f "$tmp/live1.fifo"
cp "$stream" "$tmp/live1.fifo"
run "$bin" watch --db "$tmp/live1.db" --from "$tmp/live1.fifo" --classes "$classes"
expect "the same bytes as a file" 0
has "the same bytes as a file: resumed, nothing new" "$tmp/out" '^watch: resumed; 0 lines, 0 events'

# --- SIGTERM while the input pauses ------------------------------------------
start_watch term
lines 1 5 >&3
shows "term: five lines" "$tmp/term.db" "$tmp/l5.part"
kill -TERM "$watch_pid"
if wait_until 30 test -s "$tmp/term.rc"; then
	[ "$(cat "$tmp/term.rc")" = 0 ] && ok || bad "term: exit $(cat "$tmp/term.rc")"
else
	bad "term: SIGTERM did not stop watch"
	kill -9 "$watch_pid" 2>/dev/null
fi
watch_pid=
exec 3>&-
"$bin" log --db "$tmp/term.db" >"$tmp/term.log"
same "term: what was read, no end of stream" "$tmp/l5.part" "$tmp/term.log"

# --- --idle-ms -------------------------------------------------------------
for v in 0 60001; do
	run "$bin" watch --db "$tmp/x" --from "$stream" --idle-ms $v
	expect "--idle-ms $v" 2
	has "--idle-ms $v: says the range" "$tmp/err" 'idle-ms 1\.\.60000'
done
run "$bin" watch --db "$tmp/idle" --from "$stream" --classes "$classes" --idle-ms 5
expect "--idle-ms 5 on a file" 0
"$bin" log --db "$tmp/idle" >"$tmp/idle.log"
same "--idle-ms on a file changes nothing" "$tmp/all.want" "$tmp/idle.log"
run "$bin" watch --help
has "--help: --idle-ms and its default" "$tmp/out" '--idle-ms N .*'
has "--help: the default" "$tmp/out" 'default.*100; 1\.\.60000'
has "--help: a restart on a pipe" "$tmp/out" 'restart on a'

echo "pipe_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
