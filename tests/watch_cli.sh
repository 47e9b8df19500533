#!/bin/sh
# Integration test of `gpuledger watch --from FILE` (DESIGN 6, 9): the real
# binary on the hand-written streams tests/ingest/*.ndjson, whose expected
# states (tests/ingest/*.replay.json) and log (acme.log.ndjson) were worked
# out by hand from DESIGN 2-3 and then compared with the tool; a second run
# resumes and adds nothing; stdin, refusals, usage errors, and verify after.
# Usage: tests/watch_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
dir=$(dirname "$0")/ingest
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$(dirname "$0")/lib/cli.sh"
classes=$dir/classes.json

canon() {
	python3 -c 'import json, sys
d = json.load(sys.stdin)
d.pop("chainHead", None)
print(json.dumps(d, sort_keys=True, separators=(",", ":")))'
}
# last_seq DB: the seq of the log's last event; fails (printing nothing)
# when log fails or prints no seq, so that two failures never compare equal.
last_seq() {
	"$bin" log --db "$1" >"$tmp/seq.log" 2>/dev/null || return 1
	ls_seq=$(tail -n 1 "$tmp/seq.log" | sed -n 's/.*"seq":\([0-9][0-9]*\).*/\1/p')
	[ -n "$ls_seq" ] && echo "$ls_seq"
}

# --- the fixtures, each into a new ledger --------------------------------
for stream in "$dir"/*.ndjson; do
	name=$(basename "$stream" .ndjson)
	[ -f "$dir/$name.replay.json" ] || continue
	db=$tmp/$name
	run "$bin" watch --db "$db" --from "$stream" --classes "$classes"
	expect "$name: watch" 0
	has "$name: summary" "$tmp/out" '^watch: [0-9]+ lines, [0-9]+ events.*; start read [0-9]+ records$'
	run "$bin" replay --db "$db" --json
	expect "$name: replay" 0
	canon <"$tmp/out" >"$tmp/$name.got"
	canon <"$dir/$name.replay.json" >"$tmp/$name.want"
	same "$name: replay --json" "$tmp/$name.want" "$tmp/$name.got"
	run "$bin" verify --db "$db"
	expect "$name: verify" 0
	# Again: resumed at the end, nothing new.
	before=$(last_seq "$db") || bad "$name: no last seq before the second run"
	run "$bin" watch --db "$db" --from "$stream" --classes "$classes" --verbose
	expect "$name: second run" 0
	has "$name: resumed" "$tmp/out" '^watch: resumed; .* 0 events'
	has "$name: --verbose says when the start was done" "$tmp/err" \
		'^watch: ready in [0-9]+\.[0-9] ms \(ledger open, object table loaded, .* positioned\)$'
	if after=$(last_seq "$db") && [ "$after" = "$before" ]; then ok; else
		bad "$name: second run appended or log failed (${before:-none} -> ${after:-none})"
	fi
done

# The whole log of acme, event for event.
"$bin" log --db "$tmp/acme" >"$tmp/acme.log"
same "acme: log" "$dir/acme.log.ndjson" "$tmp/acme.log"

# --- standard input --------------------------------------------------------
run sh -c "\"$bin\" watch --db \"$tmp/stdin\" --from - --classes \"$classes\" <\"$dir/acme.ndjson\""
expect "stdin: watch" 0
"$bin" log --db "$tmp/stdin" >"$tmp/stdin.log"
same "stdin: same log as the file" "$dir/acme.log.ndjson" "$tmp/stdin.log"
run sh -c "\"$bin\" watch --db \"$tmp/stdin\" --from - </dev/null"
expect "stdin: no resume" 2
has "stdin: says why" "$tmp/err" 'standard input'

# --- a growing file continues where it was ----------------------------------
head -n 5 "$dir/acme.ndjson" >"$tmp/grow.ndjson"
run "$bin" watch --db "$tmp/grow" --from "$tmp/grow.ndjson" --classes "$classes"
expect "grow: first part" 0
tail -n +6 "$dir/acme.ndjson" >>"$tmp/grow.ndjson"
run "$bin" watch --db "$tmp/grow" --from "$tmp/grow.ndjson" --classes "$classes"
expect "grow: the rest" 0
# Only the 10 new lines are read: the engine comes from the object table.
has "grow: resumed" "$tmp/out" '^watch: resumed; 10 lines, 13 events'
# The same log as one run but for where NOTE Synced stands: at the first
# end of the stream (after the first part), once (DESIGN 7, 9).
"$bin" log --db "$tmp/grow" >"$tmp/grow.log"
n=$(grep -c '"code":"Synced"' "$tmp/grow.log")
[ "$n" = 1 ] && ok || bad "grow: $n NOTE Synced, want 1"
content() { jq -c 'select(.code != "Synced") | del(.seq)' "$1"; }
content "$dir/acme.log.ndjson" >"$tmp/grow.want"
content "$tmp/grow.log" >"$tmp/grow.got"
same "grow: same log as one run (but NOTE Synced)" "$tmp/grow.want" "$tmp/grow.got"

# --- refusals and usage errors ------------------------------------------------
run "$bin" watch --db "$tmp/acme" --from "$dir/tables.ndjson" --classes "$classes"
expect "another file" 2
has "another file: says which" "$tmp/err" 'follows .*acme.ndjson'
run "$bin" watch --db "$tmp/acme" --from "$dir/acme.ndjson"
expect "other --classes" 2
has "other --classes: says why" "$tmp/err" 'classes'
run "$bin" watch --db "$tmp/x" --from "$tmp/missing.ndjson"
expect "missing file" 2
has "missing file: named" "$tmp/err" 'missing.ndjson'
run "$bin" watch --db "$tmp/x" --from "$dir/acme.ndjson" --classes "$tmp/missing.json"
expect "missing --classes" 2
has "missing --classes: named" "$tmp/err" 'missing.json'
echo '{"classes": [{"name": "A"}]}' >"$tmp/bad.json"
run "$bin" watch --db "$tmp/x" --from "$dir/acme.ndjson" --classes "$tmp/bad.json"
expect "invalid --classes" 2
has "invalid --classes: says why" "$tmp/err" 'DNS-1123'
run "$bin" watch --from "$dir/acme.ndjson"
expect "no --db" 2
run "$bin" watch --db "$tmp/x" --from "$dir/acme.ndjson" --bogus
expect "unknown option" 2
run "$bin" watch --help
expect "--help" 0
has "--help: --from" "$tmp/out" '--from FILE'
has "--help: stdin cannot resume" "$tmp/out" 'cannot be resumed'

# --- an oversized line is a NOTE ------------------------------------------
run "$bin" watch --db "$tmp/big" --from "$dir/acme.ndjson" --classes "$classes" --max-object-bytes 300
expect "oversized: watch" 0
"$bin" log --db "$tmp/big" >"$tmp/big.log"
has "oversized: NOTE" "$tmp/big.log" '"code":"Oversized"'
has "oversized: valid lines still there" "$tmp/big.log" '"type":"TENANT"'
run "$bin" verify --db "$tmp/big"
expect "oversized: verify" 0

# --- an object whose table record passes the ledger's bound ---------------
# A VMInstance of 1.1 million GPU entries (18 MB) is within a raised
# --max-object-bytes but its record passes LEDGER_OBJECT_MAX_BYTES (16 MiB):
# the object table's bounded buffer refuses it, and watch stops with exit 2
# naming the object, as the ledger did before, instead of growing.
python3 - "$dir/acme.ndjson" >"$tmp/huge.ndjson" <<'PY'
import json, sys
print(open(sys.argv[1]).readline(), end="")
print(json.dumps({"type": "ADDED", "time": "2026-03-01T10:00:05Z", "object": {
    "apiVersion": "apps.cozystack.io/v1alpha1", "kind": "VMInstance",
    "metadata": {"namespace": "tenant-acme", "name": "huge", "uid": "vm-huge"},
    "spec": {"gpus": [{"class": "h100"}] * 1100000}}}, separators=(",", ":")))
PY
run "$bin" watch --db "$tmp/huge" --from "$tmp/huge.ndjson" --classes "$classes" --max-object-bytes 33554432
expect "record past the table's bound: exit 2" 2
has "record past the table's bound: says which and why" "$tmp/err" 'object ctenant-acme/huge: record of more than 16777216 bytes'
rm -f "$tmp/huge.ndjson"

# --- killed at random moments, restarted: the log of one run ----------------
# A generated stream (its seed printed; WATCH_SEED=N repeats one) of GPU
# pods, nodes, namespaces and dormant pods each seen once (example.com/fpga,
# in no class until the ConfigMap halfway through maps it: only the object
# table remembers them across a restart). `watch --from` is killed with
# SIGKILL at random moments and restarted until a run ends; the log must be
# the uninterrupted run's event for event, and the table must be the
# engine's: a further run adds nothing.
seed=${WATCH_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
echo "watch_cli: kill seed $seed"
python3 - "$seed" "$classes" >"$tmp/kill.ndjson" <<'PYEOF'
import json, random, sys, time
rnd = random.Random(int(sys.argv[1]))
table = json.load(open(sys.argv[2]))
table["classes"].append({"name": "fpga", "resourceNames": ["example.com/fpga"]})
n = 20000
def line(typ, obj, i):
    t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1767225600 + i // 10))
    print(json.dumps({"type": typ, "time": t, "object": obj}, separators=(",", ":")))
def pod(name, ns, node, res, q):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": ns, "name": name, "uid": "u-" + name},
            "spec": {"nodeName": node, "containers": [{"name": "c",
                     "resources": {"limits": {res: str(q)}}}]},
            "status": {"phase": "Running"}}
for i in range(n):
    r, k = rnd.random(), rnd.randrange(60)
    if i == n // 2:
        line("MODIFIED", {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"namespace": "cozy-system", "name": "gpu-classes"},
             "data": {"classes.json": json.dumps(table)}}, i)
    elif r < 0.45:
        res = rnd.choice(["nvidia.com/GH100_H100_SXM5_80GB",
                          "nvidia.com/AD102GL_L40S"])
        line("DELETED" if rnd.random() < 0.15 else "ADDED",
             pod("p%d" % k, "tenant-t%d" % (k % 4), "n%d" % (k % 3), res,
                 1 + rnd.randrange(3)), i)
    elif r < 0.55:
        line("ADDED", pod("d%d" % i, "tenant-t%d" % (k % 4), "n%d" % (k % 3),
                          "example.com/fpga", 1 + rnd.randrange(2)), i)
    elif r < 0.65:
        line("ADDED" if rnd.random() < 0.8 else "DELETED",
             {"apiVersion": "v1", "kind": "Namespace",
              "metadata": {"name": "tenant-t%d" % (k % 4)}}, i)
    elif r < 0.75:
        line("MODIFIED", {"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": "n%d" % (k % 3)},
             "status": {"allocatable": {"nvidia.com/GH100_H100_SXM5_80GB":
                                        str(rnd.randrange(9))}}}, i)
    else:
        line("ADDED", pod("c%d" % k, "tenant-t%d" % (k % 4), "n1", "cpu", 1), i)
PYEOF
kw="--classes $classes --no-sync --batch 40"
t0=$(date +%s%N)
run "$bin" watch --db "$tmp/kwhole" --from "$tmp/kill.ndjson" $kw
expect "kill: uninterrupted run" 0
span_ms=$((($(date +%s%N) - t0) / 1000000 + 1))
"$bin" log --db "$tmp/kwhole" >"$tmp/kwhole.log"
has "kill: the ConfigMap maps the dormant pods" "$tmp/kwhole.log" '"type":"ALLOC".*"class":"fpga"|"class":"fpga".*"type":"ALLOC"'
kills=0
i=0
r=$seed
while :; do
	"$bin" watch --db "$tmp/kkill" --from "$tmp/kill.ndjson" $kw \
		>"$tmp/kout" 2>"$tmp/kerr" &
	pid=$!
	r=$(((r * 1103515245 + 12345) % 2147483648))
	# Within the first quarter of a whole run: several kills land
	# before what is left is quick to finish.
	ms=$((r % (span_ms / 4 + 1)))
	sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
	kill -9 "$pid" 2>/dev/null && kills=$((kills + 1))
	{ wait "$pid"; } 2>/dev/null
	st=$?
	i=$((i + 1))
	[ "$st" -eq 0 ] && break
	if [ "$st" -ne 137 ]; then
		bad "kill: run $i failed ($st): $(head -c 300 "$tmp/kerr")"
		break
	fi
	if [ $i -ge 30 ]; then
		run "$bin" watch --db "$tmp/kkill" --from "$tmp/kill.ndjson" $kw
		expect "kill: the last run" 0
		break
	fi
done
echo "watch_cli: $kills kills in $i runs over a ${span_ms} ms run"
"$bin" log --db "$tmp/kkill" >"$tmp/kkill.log"
same "kill: the log of one run (seed $seed)" "$tmp/kwhole.log" "$tmp/kkill.log"
run "$bin" verify --db "$tmp/kkill"
expect "kill: verify" 0
run "$bin" watch --db "$tmp/kkill" --from "$tmp/kill.ndjson" $kw
expect "kill: once more" 0
has "kill: once more adds nothing" "$tmp/out" '^watch: resumed; 0 lines, 0 events'
# --- the parse pipeline changes nothing (DESIGN 10) --------------------------
# The same streams parsed on the engine's thread (--parse-threads 0), by one
# worker (the default) and by three: the same log, the same chain head. The
# all-GPU stream sends every line through the parse; the mixed one through
# the fast path too, with a line that is not JSON, a blank line, an
# oversized one and a CRLF ending added.
"$bin" simulate --seed 7 --events 3000 --all-gpu-pods --out "$tmp/gpu.ndjson" 2>/dev/null
"$bin" simulate --seed 8 --events 3000 --out "$tmp/mix.ndjson" 2>/dev/null
{
	head -n 1000 "$tmp/mix.ndjson"
	echo '{"type":"ADDED","object":'
	echo
	head -c 70000 /dev/zero | tr '\0' 'x'
	echo
	sed -n 1001p "$tmp/mix.ndjson" | sed 's/$/\r/'
	tail -n +1002 "$tmp/mix.ndjson"
} >"$tmp/mix2.ndjson"
for stream in gpu mix2; do
	for th in 0 1 3; do
		db=$tmp/pipe-$stream-$th
		run "$bin" watch --db "$db" --from "$tmp/$stream.ndjson" \
			--parse-threads $th --max-object-bytes 65536
		expect "pipeline $stream $th: watch" 0
		"$bin" log --db "$db" >"$tmp/pipe-$stream-$th.log"
		"$bin" verify --db "$db" >"$tmp/pipe-$stream-$th.verify"
	done
	has "pipeline $stream: events" "$tmp/pipe-$stream-0.log" '"type":"RESERVE"'
	for th in 1 3; do
		same "pipeline $stream $th: log" "$tmp/pipe-$stream-0.log" "$tmp/pipe-$stream-$th.log"
		same "pipeline $stream $th: head" "$tmp/pipe-$stream-0.verify" "$tmp/pipe-$stream-$th.verify"
	done
done
has "pipeline mix2: malformed line noted" "$tmp/pipe-mix2-1.log" '"code":"MalformedLine"'
has "pipeline mix2: oversized line noted" "$tmp/pipe-mix2-1.log" '"code":"Oversized"'
run "$bin" watch --db "$tmp/x" --from "$tmp/gpu.ndjson" --parse-threads 17
expect "--parse-threads 17" 2
has "--parse-threads 17: says the range" "$tmp/err" 'parse-threads 0\.\.16'

echo "watch_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
