#!/bin/sh
# Integration test of the transparency tools (DESIGN 4.4): keygen, signed
# checkpoints (checkpoint --sign-key, head), prove and check-proof,
# verify --checkpoint, and the tamper suite an auditor runs against a note
# kept outside the ledger: a cut tail, a log rewritten with its chain and
# tree recomputed, a changed record. tests/tlog/check.py checks the log,
# the checkpoint and a proof with no gpuledger code (python3-cryptography).
# Usage: tests/tlog_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$(dirname "$0")/lib/cli.sh"
db=$tmp/db
keys=$tmp/keys
pub=$keys/gpuledger.example_prod.pub
key=$keys/gpuledger.example_prod.key

run "$bin" simulate --seed 16 --events 3000 --out "$tmp/stream.ndjson"
expect "simulate" 0
run "$bin" watch --from "$tmp/stream.ndjson" --db "$db"
expect "watch" 0

# --- keys ----------------------------------------------------------------
run "$bin" keygen --name gpuledger.example/prod --out "$keys"
expect "keygen" 0
has "keygen prints the verifier key" "$tmp/out" \
	'^gpuledger\.example/prod\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$'
[ "$(stat -c %a "$key")" = 600 ] && ok || bad "keygen: the key is not 0600"
run "$bin" keygen --name "bad name" --out "$tmp/k2"
expect "keygen refuses a name with a space" 2

# --- signed checkpoints ------------------------------------------------
run "$bin" head --db "$db"
expect "head before any signature" 1
run "$bin" checkpoint --db "$db" --sign-key "$key"
expect "checkpoint --sign-key" 0
run "$bin" head --db "$db"
expect "head" 0
cp "$tmp/out" "$tmp/cp1"
n1=$(sed -n 2p "$tmp/cp1")
last=$("$bin" log --db "$db" | wc -l)
[ "$n1" = "$last" ] && ok || bad "head: size $n1, log $last"
has "head: origin is the key name" "$tmp/cp1" '^gpuledger\.example/prod$'
has "head: signature line" "$tmp/cp1" \
	'^— gpuledger\.example/prod [A-Za-z0-9+/]+=*$'

# --- proofs ------------------------------------------------------------
run "$bin" prove --db "$db" --seq 17
expect "prove --seq" 0
cp "$tmp/out" "$tmp/incl.json"
run "$bin" check-proof --key "$pub" <"$tmp/incl.json"
expect "check-proof inclusion" 0
has "check-proof says ok" "$tmp/out" "^ok: seq 17 is in the tree of size $n1\$"
run "$bin" check-proof --key "$pub" --checkpoint "$tmp/cp1" <"$tmp/incl.json"
expect "check-proof with the note kept outside" 0
# One changed hash, a changed event, another key: refused.
python3 -c 'import json,sys,base64
p=json.load(open(sys.argv[1])); h=bytearray(base64.b64decode(p["hashes"][2])); h[5]^=4
p["hashes"][2]=base64.b64encode(bytes(h)).decode(); json.dump(p,open(sys.argv[2],"w"))' \
	"$tmp/incl.json" "$tmp/bad1.json"
run "$bin" check-proof --key "$pub" <"$tmp/bad1.json"
expect "check-proof: a flipped bit" 1
has "check-proof names why" "$tmp/out" '^invalid: the inclusion proof'
sed 's/"seq":17,"time"/"seq":17,"extra":1,"time"/' "$tmp/incl.json" >"$tmp/bad2.json"
run "$bin" check-proof --key "$pub" <"$tmp/bad2.json"
expect "check-proof: a changed event" 1
run "$bin" keygen --name other.example/log --out "$tmp/other"
run "$bin" check-proof --key "$tmp/other/other.example_log.pub" <"$tmp/incl.json"
expect "check-proof: a note no known key verifies" 1
has "check-proof: unknown key" "$tmp/out" 'no known key signed'
# A witness cosignature of an unknown key is ignored.
python3 -c 'import json,sys
p=json.load(open(sys.argv[1]))
p["checkpoint"]+="\u2014 witness.example/w1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
json.dump(p,open(sys.argv[2],"w"))' "$tmp/incl.json" "$tmp/cosig.json"
run "$bin" check-proof --key "$pub" <"$tmp/cosig.json"
expect "check-proof ignores a cosignature of another key" 0
run "$bin" prove --db "$db" --seq 17 --format c2sp
expect "prove --format c2sp" 0
has "tlog-proof header" "$tmp/out" '^c2sp\.org/tlog-proof@v1$'
has "tlog-proof index" "$tmp/out" '^index 16$'

# Consistency: sign again after more events.
printf '%s\n' '{"type":"TICK","time":"2031-01-01T00:00:00Z"}' \
	'{"type":"TICK","time":"2031-01-02T00:00:00Z"}' >"$tmp/ticks"
run "$bin" import --db "$db" <"$tmp/ticks"
expect "import two more events" 0
run "$bin" checkpoint --db "$db" --sign-key "$key"
expect "second signed checkpoint" 0
"$bin" head --db "$db" >"$tmp/cp2"
n2=$(sed -n 2p "$tmp/cp2")
[ "$n2" -eq $((n1 + 2)) ] && ok || bad "second checkpoint size $n2"
run "$bin" prove --db "$db" --from "$n1" --to "$n2"
expect "prove --from --to" 0
cp "$tmp/out" "$tmp/cons.json"
run "$bin" check-proof --key "$pub" <"$tmp/cons.json"
expect "check-proof consistency" 0
run "$bin" check-proof --key "$pub" --checkpoint "$tmp/cp2" \
	--old-checkpoint "$tmp/cp2" <"$tmp/cons.json"
expect "check-proof consistency against the wrong old note" 1

# --- python: no gpuledger code -----------------------------------------
"$bin" log --db "$db" >"$tmp/log.ndjson"
run "$bin" prove --db "$db" --seq 5 --size "$n2"
cp "$tmp/out" "$tmp/p5.json"
run python3 "$(dirname "$0")/tlog/check.py" "$tmp/log.ndjson" "$pub" "$tmp/cp2" "$tmp/p5.json"
expect "python check of log, checkpoint and proof" 0
has "python check ok" "$tmp/out" "^ok $n2 events"

# --- verify against a note kept outside --------------------------------
run "$bin" verify --db "$db" --checkpoint "$tmp/cp2" --key "$pub"
expect "verify --checkpoint on the real ledger" 0
# A cut tail, with its checkpoints: a new ledger holding the first events.
head -n $((n2 - 3)) "$tmp/log.ndjson" | "$bin" import --db "$tmp/cut" --create >/dev/null
run "$bin" verify --db "$tmp/cut"
expect "the cut ledger verifies on its own" 0
run "$bin" verify --db "$tmp/cut" --checkpoint "$tmp/cp2" --key "$pub"
expect "verify --checkpoint: a cut tail" 1
has "cut tail named" "$tmp/out" "departs from the signed checkpoint at size $n2: it holds $((n2 - 3)) events"
# A rewritten log: one budget changed, the chain and the tree recomputed.
awk -v n=40 'NR==n && /"type":"NOTE"/ {sub(/"message":"/,"&rewritten ")} {print}' \
	"$tmp/log.ndjson" >"$tmp/rewritten.ndjson"
if cmp -s "$tmp/log.ndjson" "$tmp/rewritten.ndjson"; then
	# No NOTE at line 40: change the time of the last event instead.
	sed '$ s/"time":"2031-01-02T00:00:00/"time":"2031-01-03T00:00:00/' \
		"$tmp/log.ndjson" >"$tmp/rewritten.ndjson"
fi
cmp -s "$tmp/log.ndjson" "$tmp/rewritten.ndjson" && bad "rewrite changed nothing" || ok
"$bin" import --db "$tmp/rw" --create <"$tmp/rewritten.ndjson" >/dev/null
run "$bin" verify --db "$tmp/rw"
expect "the rewritten ledger verifies on its own" 0
run "$bin" verify --db "$tmp/rw" --checkpoint "$tmp/cp2" --key "$pub"
expect "verify --checkpoint: a rewritten log" 1
has "rewrite named" "$tmp/out" "departs from the signed checkpoint at size $n2: its tree of that size has another root"
# The old checkpoint still matches the rewritten log only if the change
# came after it.
run "$bin" verify --db "$tmp/rw" --checkpoint "$tmp/cp1" --key "$pub"
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] && ok || bad "verify old checkpoint: exit $rc"
# A forged note (another key) is refused before anything is compared.
run "$bin" verify --db "$db" --checkpoint "$tmp/cp2" --key "$tmp/other/other.example_log.pub"
expect "verify --checkpoint with another key" 1

echo "tlog_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
