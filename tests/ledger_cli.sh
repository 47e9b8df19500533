#!/bin/sh
# Integration test of the ledger's command-line tools (DESIGN 6): import,
# replay, verify, log, checkpoint, backup, stats and eval --db, on a ledger
# built from the hand-written fixture tests/ledger/small.ndjson, whose
# expected states (tests/ledger/*.json, eval.out) were worked out by hand
# from DESIGN 2-3 and then compared with the tools.
# Usage: tests/ledger_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
dir=$(dirname "$0")/ledger
tmp=$(mktemp -d)
trap 'kill "$follow_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
follow_pid=
pass=0
fail=0
. "$(dirname "$0")/lib/cli.sh"
db=$tmp/db

# Canonical JSON (sorted keys, no space) of a hand-written expected file.
canon() {
	python3 -c 'import json, sys
print(json.dumps(json.load(sys.stdin), sort_keys=True, separators=(",", ":")))'
}
no_head() { sed 's/"chainHead":"[0-9a-f]*",//'; }

# --- build the ledger --------------------------------------------------
run "$bin" import --db "$db" --create --batch 5 <"$dir/small.ndjson"
expect "import --create" 0
has "import summary" "$tmp/out" '^imported 38 events, last seq 38$'

# --- replay ------------------------------------------------------------
run "$bin" replay --db "$db" --json
expect "replay --json" 0
no_head <"$tmp/out" >"$tmp/replay.got"
canon <"$dir/small.replay.json" >"$tmp/replay.want"
same "replay --json at the last seq" "$tmp/replay.want" "$tmp/replay.got"
cp "$tmp/out" "$tmp/replay.full"
head=$(sed 's/.*"chainHead":"\([0-9a-f]*\)".*/\1/' "$tmp/replay.full")
[ ${#head} -eq 64 ] && ok || bad "replay --json: no chainHead"

run "$bin" verify --db "$db"
expect "verify" 0
has "verify line" "$tmp/out" "^ok: 38 events, [0-9]+ checkpoints, head $head\$"

canon <"$dir/acme.seq29.json" >"$tmp/acme29.want"
for at in 29 2026-03-01T23:59:59Z 2026-03-01T23:59:59.5Z \
	2026-03-02T00:00:00Z 2026-03-02T01:00:00+01:00; do
	run "$bin" replay --db "$db" --at "$at" --tenant tenant-acme --json
	expect "replay --at $at" 0
	no_head <"$tmp/out" >"$tmp/acme29.got"
	same "replay --at $at --tenant tenant-acme" "$tmp/acme29.want" \
		"$tmp/acme29.got"
done
# The head at an earlier seq comes from that event's record; the copy made
# below must report the same one.
run "$bin" replay --db "$db" --at 29 --json
head29=$(sed 's/.*"chainHead":"\([0-9a-f]*\)".*/\1/' "$tmp/out")
[ ${#head29} -eq 64 ] && [ "$head29" != "$head" ] && ok ||
	bad "replay --at 29: chainHead $head29"

run "$bin" replay --db "$db" --at 2026-03-02T09:00:00Z --json
has "replay --at a day-2 time" "$tmp/out" '"seq":31,'
run "$bin" replay --db "$db" --at 2020-01-01T00:00:00Z --json
has "replay before the first event" "$tmp/out" \
	'^\{"chainHead":"0{64}","classes":\[\],"nodes":\[\],"seq":0,"tenants":\[\]'

# The table for operators: a header and aligned rows with the numbers of the
# JSON above.
run "$bin" replay --db "$db"
expect "replay (table)" 0
has "table header" "$tmp/out" "^seq 38  time 2026-03-02T20:00:00.000000000Z  chainHead $head\$"
has "table columns" "$tmp/out" '^TENANT +CLASS +BUDGET +OWN +SUBTREE +ALLOCATED +REMAINING +LIMITED BY$'
has "table dev h100" "$tmp/out" '^ +h100 +5 +4 +4 +3 +1 +tenant-acme-dev$'
has "table beta over" "$tmp/out" '^tenant-beta +a10 +- +0 +0 +0 +0 \(over by 1\) +tenant-beta$'
has "table prod blocked" "$tmp/out" '^tenant-acme-prod +a10 .* blocked '
has "table classes" "$tmp/out" '^h100 +h100 +16 +13 +nvidia.com/GH100_H100_SXM5_80GB$'
has "table nodes" "$tmp/out" '^node-3 +h100 +8 +0 +yes$'
run "$bin" replay --db "$db" --tenant tenant-beta
has "table --tenant" "$tmp/out" '^tenant-beta +a10 '
has "table --tenant total" "$tmp/out" '^ +\(all\) +1 +2 +2 +0 +0 \(over by 1\) +tenant-beta$'
if grep -q '^tenant-acme ' "$tmp/out"; then bad "table --tenant shows others"; else ok; fi

# --- log, and a copy through import -------------------------------------
run "$bin" log --db "$db"
expect "log" 0
cp "$tmp/out" "$tmp/log.all"
[ "$(wc -l <"$tmp/log.all")" -eq 38 ] && ok || bad "log: $(wc -l <"$tmp/log.all") lines"
has "log line 19" "$tmp/log.all" '^\{"after":3,"before":0,"class":"h100","kind":"ResourceClaim","name":"vm-instance-vm-d-gpu1","namespace":"tenant-acme-dev","node":"node-1","seq":19,"time":"2026-03-01T09:31:00.000000000Z","type":"ALLOC","uid":"u-claim-d"\}$'
run "$bin" log --db "$db" --from 10 --limit 5
expect "log --from --limit" 0
sed -n 10,14p "$tmp/log.all" >"$tmp/log.want"
same "log --from 10 --limit 5" "$tmp/log.want" "$tmp/out"
run "$bin" log --db "$db" --from 39
[ "$rc" -eq 0 ] && [ ! -s "$tmp/out" ] && ok || bad "log --from past the end"
# Far past the end: nothing, exit 0, and stderr says where the log ends
# (once said "corrupt at seq N: missing from the log").
for f in 40 500 9223372036854775808; do
	run "$bin" log --db "$db" --from $f
	[ "$rc" -eq 0 ] && [ ! -s "$tmp/out" ] && ok || bad "log --from $f: exit $rc"
	has "log --from $f: says where the log ends" "$tmp/err" "log ends at seq 38: nothing from seq $f\$"
done
run "$bin" log --db "$db" --from 18446744073709551615
expect "log --from 2^64-1: a usage error" 2
has "log --from 2^64-1: too large, not 'not an integer'" "$tmp/err" 'is too large \(at most 19 digits\)'

run "$bin" import --db "$tmp/copy" --create --no-sync <"$tmp/log.all"
expect "import of log" 0
run "$bin" verify --db "$tmp/copy"
has "copy has the same head" "$tmp/out" "^ok: 38 events, [0-9]+ checkpoints, head $head\$"
run "$bin" replay --db "$tmp/copy" --json
same "copy replays the same" "$tmp/replay.full" "$tmp/out"
run "$bin" replay --db "$tmp/copy" --at 29 --json
has "copy head at 29" "$tmp/out" "\"chainHead\":\"$head29\""

# --- checkpoint ----------------------------------------------------------
run "$bin" replay --db "$db" --at 29 --json
cp "$tmp/out" "$tmp/at29.before"
run "$bin" checkpoint --db "$db"
expect "checkpoint" 0
has "checkpoint seq" "$tmp/out" '^38$'
run "$bin" replay --db "$db" --json
same "replay after checkpoint" "$tmp/replay.full" "$tmp/out"
run "$bin" replay --db "$db" --at 29 --json
same "replay --at 29 after checkpoint" "$tmp/at29.before" "$tmp/out"
run "$bin" verify --db "$db"
has "verify after checkpoint" "$tmp/out" "^ok: 38 events, [1-9][0-9]* checkpoints, head $head\$"

# --- backup --------------------------------------------------------------
run "$bin" backup --db "$db" --to "$tmp/backup"
expect "backup" 0
run "$bin" verify --db "$tmp/backup"
has "verify backup" "$tmp/out" "^ok: 38 events, [1-9][0-9]* checkpoints, head $head\$"
run "$bin" replay --db "$tmp/backup" --json
same "backup replays the same" "$tmp/replay.full" "$tmp/out"

# --- stats ---------------------------------------------------------------
run "$bin" stats --db "$db"
expect "stats" 0
has "stats events" "$tmp/out" '^events: 38$'
has "stats times" "$tmp/out" '^firstTime: 2026-03-01T08:00:00.000000000Z$'
has "stats checkpoints" "$tmp/out" '^checkpoints: [1-9]'
has "stats head" "$tmp/out" "^chainHead: $head\$"
run "$bin" stats --db "$db" --json
has "stats --json" "$tmp/out" '^\{.*"events":38,.*"lastSeq":38,.*\}$'

# --- eval on the ledger's state -----------------------------------------
run "$bin" eval --db "$db" <"$dir/eval.in"
expect "eval --db" 0
same "eval --db answers" "$dir/eval.out" "$tmp/out"
echo '{"function":"Remaining","input":{"namespace":"tenant-acme-dev"}}' >"$tmp/rem.in"
run "$bin" eval --db "$db" --at 29 <"$tmp/rem.in"
has "eval --db --at 29" "$tmp/out" '"h100":\{"blocked":false,"limitedBy":\{"key":"h100.gpuclass.cozystack.io/devices","tenant":"tenant-acme-dev"\},"remaining":1\}.*"total":\{"limitedBy":\{"key":"gpuclass.cozystack.io/devices","tenant":"tenant-acme"\},"remaining":4\}'
run "$bin" eval --at 29 <"$tmp/rem.in"
expect "eval --at without --db" 2

# --- failure paths --------------------------------------------------------
for cmd in replay verify log stats checkpoint "backup --to $tmp/b2" import; do
	# shellcheck disable=SC2086
	run "$bin" $cmd </dev/null
	expect "$cmd without --db" 2
	has "$cmd without --db names it" "$tmp/err" '^gpuledger: .*--db DIR is required$'
	# shellcheck disable=SC2086
	run "$bin" $cmd --db "$tmp/nonexistent" </dev/null
	expect "$cmd --db nonexistent" 2
	has "$cmd --db nonexistent names it" "$tmp/err" "^gpuledger: .*$tmp/nonexistent: No such file"
	# shellcheck disable=SC2086
	run "$bin" $cmd --help
	expect "$cmd --help" 0
	has "$cmd --help" "$tmp/out" '^usage: gpuledger '
done
run "$bin" import --help
has "import --help is honest" "$tmp/out" 'Not part of DESIGN 6'
has "import --help on failures" "$tmp/out" 'committed and stay'
run "$bin" replay --db "$db" --nope
expect "unknown option" 2
has "unknown option named" "$tmp/err" 'unknown option "--nope"'
run "$bin" log --db "$db" --limit ten
expect "log --limit ten" 2
run "$bin" log --db "$db" --limit
expect "log --limit without value" 2
has "missing value named" "$tmp/err" '--limit needs a value'
# (A seq past the last is the latest state, said on stderr: at_cli.)
for at in yesterday 2026-13-01T00:00:00Z -1; do
	run "$bin" replay --db "$db" --at "$at"
	expect "replay --at $at" 2
	has "replay --at $at names it" "$tmp/err" "^gpuledger: replay: --at"
done
run "$bin" replay --db "$db" --tenant tenant-nope
expect "unknown tenant" 2
has "unknown tenant named" "$tmp/err" 'tenant-nope'
run "$bin" replay --db "$db" --tenant tenant-old
expect "a tenant that is gone" 2
mkdir "$tmp/empty"
run "$bin" verify --db "$tmp/empty"
expect "verify of a directory that is no ledger" 2
run "$bin" import --db "$db" --batch 0 </dev/null
expect "import --batch 0" 2

# An import that stops at a line that does not fit: the events before it
# are committed (whole batches and the part of the last one), the rest not.
{ sed -n 1,7p "$dir/small.ndjson"
  echo '{"type":"RELEASE","namespace":"tenant-acme","class":"h100","kind":"VMInstance","name":"vm-a","uid":"u-vm-a","before":2,"after":0}'
  sed -n 8,9p "$dir/small.ndjson"; } >"$tmp/bad.ndjson"
run "$bin" import --db "$tmp/bad" --create --batch 3 <"$tmp/bad.ndjson"
expect "import of a line that does not fit" 2
has "the line is named" "$tmp/err" '^gpuledger: import: line 8: '
has "what stays is said" "$tmp/err" '7 events were committed'
run "$bin" log --db "$tmp/bad"
[ "$(wc -l <"$tmp/out")" -eq 7 ] && ok || bad "bad import kept $(wc -l <"$tmp/out") events, want 7"
run "$bin" verify --db "$tmp/bad"
expect "verify after a failed import" 0
# ... and the rest can follow once the bad line is gone.
sed -n 8,38p "$dir/small.ndjson" | sed 's/^{"seq":[0-9]*,/{/' >"$tmp/rest.ndjson"
run "$bin" import --db "$tmp/bad" <"$tmp/rest.ndjson"
expect "import of the rest" 0
run "$bin" replay --db "$tmp/bad" --json
same "resumed import replays the same" "$tmp/replay.full" "$tmp/out"

printf '%s\n' '{"type":"TICK"}' 'not json' >"$tmp/junk.ndjson"
run "$bin" import --db "$tmp/junk" --create <"$tmp/junk.ndjson"
expect "import of malformed JSON" 2
has "malformed line named" "$tmp/err" 'line 2: malformed JSON'
echo '{"seq":5,"type":"TICK"}' >"$tmp/seq.ndjson"
run "$bin" import --db "$tmp/junk" <"$tmp/seq.ndjson"
expect "import of a wrong seq" 2
has "wrong seq named" "$tmp/err" 'line 1: seq 5, expected 2'
echo '{"time":"2020-01-01T00:00:00Z","type":"TICK"}' >"$tmp/old.ndjson"
run "$bin" import --db "$db" <"$tmp/old.ndjson"
expect "import of a time going back" 2

# --- log to a reader that goes away, and --follow -----------------------
awk 'BEGIN { for (i = 0; i < 30000; i++) print "{\"type\":\"TICK\"}" }' |
	"$bin" import --db "$tmp/big" --create --no-sync --batch 1000 >/dev/null
{ "$bin" log --db "$tmp/big" 2>"$tmp/pipe.err"; echo $? >"$tmp/pipe.rc"; } |
	head -n 2 >"$tmp/pipe.out"
[ "$(cat "$tmp/pipe.rc")" = 0 ] && [ ! -s "$tmp/pipe.err" ] &&
	[ "$(wc -l <"$tmp/pipe.out")" -eq 2 ] && ok ||
	bad "log | head: status $(cat "$tmp/pipe.rc"), $(cat "$tmp/pipe.err")"

"$bin" log --db "$tmp/copy" --from 37 --follow >"$tmp/follow.out" 2>&1 &
follow_pid=$!
echo '{"time":"2026-03-03T00:00:00Z","type":"TICK"}' |
	"$bin" import --db "$tmp/copy" >/dev/null
i=0
while [ $i -lt 100 ] && [ "$(wc -l <"$tmp/follow.out")" -lt 3 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill "$follow_pid" 2>/dev/null
wait "$follow_pid"
follow_rc=$?
follow_pid=
# SIGTERM ends --follow (128 + 15); anything else (a sanitizer report, a
# crash, an error exit while following) is a failure.
if [ "$follow_rc" -eq 143 ]; then ok; else bad "log --follow ended with status $follow_rc, not by SIGTERM"; fi
has "log --follow sees a new event" "$tmp/follow.out" '"seq":39,"time":"2026-03-03T00:00:00.000000000Z","type":"TICK"'

# A reader that goes away while --follow waits for events ends it quietly.
mkfifo "$tmp/fifo"
( "$bin" log --db "$tmp/copy" --from 40 --follow >"$tmp/fifo" 2>"$tmp/quiet.err" &
  echo $! >"$tmp/quiet.pid"; wait $!; echo $? >"$tmp/quiet.rc" ) &
exec 3<"$tmp/fifo"
exec 3<&-
i=0
while [ $i -lt 100 ] && [ ! -s "$tmp/quiet.rc" ]; do
	sleep 0.1
	i=$((i + 1))
done
if [ -s "$tmp/quiet.rc" ]; then
	[ "$(cat "$tmp/quiet.rc")" = 0 ] && [ ! -s "$tmp/quiet.err" ] && ok ||
		bad "log --follow, reader gone: status $(cat "$tmp/quiet.rc") $(cat "$tmp/quiet.err")"
else
	bad "log --follow did not notice that its reader went away"
	kill "$(cat "$tmp/quiet.pid")" 2>/dev/null
fi
wait

# --- tampering ---------------------------------------------------------------
# Change one character of the claim name of event 19 in a copy of the data
# file, keeping it a valid name so that only the chain can tell.
mkdir "$tmp/tamper"
"$bin" import --db "$tmp/tamper" --create --no-sync <"$dir/small.ndjson" >/dev/null
python3 - "$tmp/tamper/data.mdb" <<'EOF'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
name = b"vm-instance-vm-d-gpu1"
at = data.find(name)
assert at >= 0, "event 19 not found in data.mdb"
while at >= 0:
    data[at + len(name) - 1] = ord("2")
    at = data.find(name, at + 1)
open(path, "wb").write(data)
EOF
run "$bin" verify --db "$tmp/tamper"
expect "verify of a tampered ledger" 1
has "tampering names the seq" "$tmp/out" '^corrupt at seq 19: '

# --- forensic verify, log and audit (DESIGN 4.3) ---------------------------
# Each case damages a compact copy (no stale pages: the one copy of a record
# is the one changed) of a ledger with no checkpoint, so that an open that
# replayed the tail would fail before naming anything; verify, log and audit
# must each name the damage with its true seq, log after printing every
# event before it, and exit 1.
edit() { python3 "$(dirname "$0")/lib/mdb_edit.py" "$@"; }
"$bin" import --db "$tmp/f0" --create --no-sync <"$dir/small.ndjson" >/dev/null
"$bin" backup --db "$tmp/f0" --to "$tmp/pristine" >/dev/null
"$bin" log --db "$tmp/pristine" >"$tmp/pristine.log"
# damaged FROM MODE ARGS...: $tmp/dmg is a damaged copy of FROM.
damaged() {
	from=$1
	shift
	rm -rf "$tmp/dmg"
	cp -r "$from" "$tmp/dmg"
	edit "$tmp/dmg/data.mdb" "$@"
}
# forensic NAME SEQ VERIFY_LINE: verify prints VERIFY_LINE (a regex) and
# exits 1; log prints the SEQ-1 events before the damage, names it and
# exits 1 (SEQ 0: log sees no damage); audit names it too (when before the
# fixture's verdict at seq 26, which audit would reach first).
forensic() {
	run "$bin" verify --db "$tmp/dmg"
	expect "verify: $1" 1
	has "verify names $1" "$tmp/out" "$3"
	run "$bin" log --db "$tmp/dmg"
	if [ "$2" -eq 0 ]; then
		expect "log: $1" 0
		same "log of $1" "$tmp/pristine.log" "$tmp/out"
		return
	fi
	expect "log: $1" 1
	head -n $(($2 - 1)) "$tmp/pristine.log" >"$tmp/log.want"
	same "log before $1" "$tmp/log.want" "$tmp/out"
	has "log names $1" "$tmp/err" "^gpuledger: log: .*at seq $2: "
	[ "$2" -ge 26 ] && return
	run "$bin" audit --db "$tmp/dmg"
	expect "audit: $1" 1
	has "audit names $1" "$tmp/err" "^gpuledger: audit: .*at seq $2: "
}
damaged "$tmp/pristine" before 34
run "$bin" replay --db "$tmp/dmg"
has "an open that replays fails first, naming no seq" "$tmp/err" \
	'before 3, state has 2'
forensic "a RELEASE's before" 34 '^corrupt at seq 34: chain head mismatch$'
damaged "$tmp/pristine" head 19
forensic "a changed head" 19 '^corrupt at seq 19: chain head mismatch$'
damaged "$tmp/pristine" rekey 1 2
forensic "seq 1 re-keyed" 1 '^corrupt at seq 1: missing from the log$'
damaged "$tmp/pristine" rekey 20 21
forensic "seq 20 re-keyed to 21" 20 '^corrupt at seq 20: missing from the log$'
damaged "$tmp/pristine" swapkeys 10 11
forensic "10 and 11 reordered" 10 '^corrupt at seq 10: missing from the log$'
damaged "$tmp/pristine" dupflag 20
forensic "a node LMDB follows into nothing" 20 \
	'^damaged storage at seq 20: read event: SIGSEGV inside LMDB'
damaged "$tmp/backup" cpbyte
forensic "a damaged checkpoint" 0 \
	'^corrupt at seq 38: checkpoint 38: digest mismatch$'
# every_tool NAME REGEX: verify, log and audit of $tmp/dmg exit 1, saying
# REGEX (on stdout or stderr).
every_tool() {
	for cmd in verify log audit; do
		run "$bin" $cmd --db "$tmp/dmg"
		expect "$cmd of $1" 1
		cat "$tmp/out" "$tmp/err" >"$tmp/both"
		has "$cmd names $1" "$tmp/both" "$2"
	done
}
# The magic of meta page 1; then the file cut in half.
rm -rf "$tmp/dmg"
cp -r "$tmp/pristine" "$tmp/dmg"
printf '\377' | dd of="$tmp/dmg/data.mdb" bs=1 seek=4112 conv=notrunc 2>/dev/null
every_tool "a damaged meta page" 'damaged storage: meta page 1: '
rm -rf "$tmp/dmg"
cp -r "$tmp/pristine" "$tmp/dmg"
size=$(wc -c <"$tmp/dmg/data.mdb")
truncate -s $((size / 2)) "$tmp/dmg/data.mdb"
every_tool "a cut file" 'damaged storage: .*beyond the file'

# Random bit flips of a bigger ledger's data.mdb (seeded: FLIP_SEED=S
# repeats a run, FLIPS=N sets how many): every run of verify, log and audit
# ends in exit 0 or 1, never a signal; exit 1 names the damage (a seq or a
# page); log prints the events before the damage it names, and all of them
# unchanged on exit 0; verify says ok only when every event is what it was.
seed=${FLIP_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
flips=${FLIPS:-60}
echo "ledger_cli: bit flips: FLIP_SEED=$seed FLIPS=$flips"
"$bin" simulate --seed 3 --events 4000 --out "$tmp/sim.ndjson"
"$bin" watch --db "$tmp/sim" --from "$tmp/sim.ndjson" --batch 100 --no-sync \
	>/dev/null
"$bin" checkpoint --db "$tmp/sim" >/dev/null
"$bin" backup --db "$tmp/sim" --to "$tmp/simc" >/dev/null
if python3 "$(dirname "$0")/lib/flips.py" "$bin" "$tmp/simc" "$tmp/flip" \
	"$seed" "$flips"; then ok; else bad "bit flips (FLIP_SEED=$seed)"; fi
# And FLIP_SEED=523755584, flip 18: a page whose flipped bit trips one of
# liblmdb's own assertions (IS_LEAF(mp) in mdb_cursor_next): verify died
# of SIGABRT; a forensic reader's assert callback ends the read as damaged
# storage (exit 1).
if python3 "$(dirname "$0")/lib/flips.py" "$bin" "$tmp/simc" "$tmp/flip18" \
	523755584 19 >/dev/null; then ok; else bad "bit flips: FLIP_SEED=523755584, an assertion of LMDB's"; fi
# And FLIP_SEED=1205420717, flip 20: a broken page in LMDB's tree of
# databases fails the read transaction at its first read of a database
# (MDB_BAD_TXN): verify said exit 2, an error; it is damaged storage,
# named (exit 1).
if python3 "$(dirname "$0")/lib/flips.py" "$bin" "$tmp/simc" "$tmp/flip20" \
	1205420717 21 >/dev/null; then ok; else bad "bit flips: FLIP_SEED=1205420717, a failed read transaction"; fi
# What those runs found (FLIP_SEED=2229552682, flip 32; 1954403431, flip
# 31): damage in a Merkle tree page, which verify read unguarded and died
# of SIGSEGV or SIGBUS inside LMDB. A fixed offset stops hitting the tree
# when the file's layout changes, so the node is found by its shape: its
# hash is moved to an overflow page past the end of the file. Guarded, the
# read names the damage as storage at the seq whose leaf it hides
# (unguarded, it was reported as a leaf that does not match).
cp -r "$tmp/simc" "$tmp/flip32"
python3 "$(dirname "$0")/lib/mdb_edit.py" "$tmp/flip32/data.mdb" treepage \
	>/dev/null
run "$bin" verify --db "$tmp/flip32"
expect "verify, a flipped tree page" 1
has "verify, a flipped tree page: named" "$tmp/out" \
	'^damaged storage at seq [0-9]+: Merkle tree: '

# A ledger written before the one verdict path (DESIGN 3.7: a single pod
# then stamped a verdict with its clock, without answeredAt, and judged a
# group on one basis, so basisSeq could be below seq - 1): serve's log of
# November 2026, imported byte for byte, still verifies to the head it had
# and every verdict still re-derives.
run "$bin" import --db "$tmp/nov" --create <"$(dirname "$0")/query/verdicts-2026-11.ndjson"
expect "import, a ledger from before the one verdict path" 0
run "$bin" verify --db "$tmp/nov"
expect "verify, a ledger from before the one verdict path" 0
has "verify, a ledger from before the one verdict path: its head" "$tmp/out" \
	'^ok: 46 events, 0 checkpoints, head b65d7fe9a6f8dcfe6001d7e4ffc74457d4f634b6207150754e831c1d1d1f5147$'
run "$bin" audit --db "$tmp/nov"
expect "audit, a ledger from before the one verdict path" 0
has "audit, a ledger from before the one verdict path: all" "$tmp/out" '^ok: 9 verdicts match'

echo "ledger_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
