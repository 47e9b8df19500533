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
server_pid=
trap 'stop_server; rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$(dirname "$0")/lib/cli.sh"

# get PATH: GET on the server into $tmp/body, the status into $code.
get() {
	code=$(curl -s -o "$tmp/body" -w '%{http_code}' "http://127.0.0.1:$port$1")
}
# wait_size N: until the server's checkpoint is of tree size N.
wait_size() {
	i=0
	while [ $i -lt 100 ]; do
		get /v1/checkpoint
		[ "$code" = 200 ] && [ "$(sed -n 2p "$tmp/body")" = "$1" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
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
python3 -c 'import json,sys
p=json.load(open(sys.argv[1])); p["event"]["extra"]=1; json.dump(p,open(sys.argv[2],"w"))' \
	"$tmp/incl.json" "$tmp/bad2.json"
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
"$bin" log --db "$db" --from 17 --limit 1 >"$tmp/line17"
sed -n 's/^extra //p' "$tmp/out" | base64 -d >"$tmp/extra17" && echo >>"$tmp/extra17"
same "tlog-proof extra is the log line" "$tmp/line17" "$tmp/extra17"

# Consistency: sign again after more events.
printf '%s\n' '{"type":"TICK","time":"2031-01-01T00:00:00Z"}' \
	'{"type":"TICK","time":"2031-01-02T00:00:00Z"}' >"$tmp/ticks"
printf '%s\n' '{"type":"TICK","time":"2031-02-01T00:00:00Z"}' \
	'{"type":"TICK","time":"2031-02-02T00:00:00Z"}' >"$tmp/ticks2"
printf '%s\n' '{"type":"TICK","time":"2031-03-01T00:00:00Z"}' \
	'{"type":"TICK","time":"2031-03-02T00:00:00Z"}' \
	'{"type":"TICK","time":"2031-03-03T00:00:00Z"}' \
	'{"type":"TICK","time":"2031-03-04T00:00:00Z"}' \
	'{"type":"TICK","time":"2031-03-05T00:00:00Z"}' >"$tmp/ticks3"
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

# --- serve: signing, the transparency routes, witnesses ------------------
cp -r "$db" "$tmp/sdb"
serve_db=$tmp/sdb
start_server --sign-key "$key" --sign-every 1
get /v1/checkpoint
[ "$code" = 200 ] && ok || bad "GET /v1/checkpoint: $code"
wait_size "$n2" && ok || bad "serve signs the current tree"
cp "$tmp/body" "$tmp/scp"
get "/v1/proof/inclusion?seq=9"
[ "$code" = 200 ] && ok || bad "GET /v1/proof/inclusion: $code"
run "$bin" check-proof --key "$pub" <"$tmp/body"
expect "check-proof of the server's inclusion proof" 0
get "/v1/proof/consistency?from=$n1&to=$n2"
[ "$code" = 200 ] && ok || bad "GET /v1/proof/consistency: $code"
run "$bin" check-proof --key "$pub" --old-checkpoint "$tmp/cp1" <"$tmp/body"
expect "check-proof of the server's consistency proof" 0
get "/v1/proof/inclusion?seq=0"
[ "$code" = 400 ] && ok || bad "inclusion seq=0: $code"
get "/v1/proof/inclusion?seq=999999"
[ "$code" = 400 ] && ok || bad "inclusion past the log: $code"
get "/v1/proof/consistency?from=5"
[ "$code" = 400 ] && ok || bad "consistency without to: $code"
# A verdict with its proof.
vm='{"namespace":"tenant-root","kind":"VMInstance","name":"vm-x","old":null,"new":{"gpus":[]}}'
vcode=$(curl -s -o "$tmp/verdict" -w '%{http_code}' -H 'Content-Type: application/json' \
	--data "$vm" "http://127.0.0.1:$port/v1/admission")
[ "$vcode" = 200 ] && ok || bad "admission: $vcode $(cat "$tmp/verdict")"
vid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/verdict")
wait_size $((n2 + 1)) && ok || bad "serve signs after the verdict"
get "/v1/verdicts/$vid?proof=1"
[ "$code" = 200 ] && ok || bad "GET verdict proof=1: $code"
python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))["proof"], open(sys.argv[2],"w"))' \
	"$tmp/body" "$tmp/vproof.json"
run "$bin" check-proof --key "$pub" <"$tmp/vproof.json"
expect "check-proof of a verdict's proof" 0
has "the verdict is the proven event" "$tmp/vproof.json" '"type": ?"VERDICT"'

# Witnesses: the first look keeps the head, later ones prove consistency.
run "$bin" witness --url "http://127.0.0.1:$port" --key "$pub" --state "$tmp/w1"
expect "witness: first look" 0
has "witness keeps the first" "$tmp/out" '^ok: first checkpoint'
run "$bin" import --db "$tmp/sdb" <"$tmp/ticks2"
wait_size $((n2 + 3)) && ok || bad "serve signs after more events"
run "$bin" witness --url "http://127.0.0.1:$port" --key "$pub" --state "$tmp/w1"
expect "witness: the tree grew consistently" 0
has "witness: extends" "$tmp/out" "^ok: tree size $((n2 + 3)) extends $((n2 + 1))\$"
cp -r "$tmp/w1" "$tmp/w2"
run "$bin" witness --url "http://127.0.0.1:$port" --key "$tmp/other/other.example_log.pub" --state "$tmp/w3"
expect "witness: another key's server" 1
stop_server
# The same key signing a rewritten log: the witness sees it.
serve_db=$tmp/rw
start_server --sign-key "$key" --sign-every 1
"$bin" import --db "$tmp/rw" <"$tmp/ticks3" >/dev/null
wait_size $((n2 + 5)) || bad "rewritten server signs"
run "$bin" witness --url "http://127.0.0.1:$port" --key "$pub" --state "$tmp/w1"
expect "witness: a rewritten log" 1
has "witness names the rewrite" "$tmp/out" 'does not extend the kept one'
stop_server
# A cut tail served and signed: the tree shrank.
serve_db=$tmp/cut
start_server --sign-key "$key" --sign-every 1
wait_size $((n2 - 3)) || bad "cut server signs"
run "$bin" witness --url "http://127.0.0.1:$port" --key "$pub" --state "$tmp/w2"
expect "witness: a cut tail" 1
has "witness names the shrink" "$tmp/out" "shrank from size $((n2 + 3)) to $((n2 - 3))"
stop_server

# The witness reads at most 64 KiB of a checkpoint (a bounded buffer): one
# of exactly 65536 bytes is read (and is no signed note), one byte more is
# refused as too large, exit 2, instead of being read on.
mkdir -p "$tmp/big/v1"
python3 - "$tmp/big" >"$tmp/big.port" 2>/dev/null <<'PY' &
import functools, http.server, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
h.log_message = lambda *a: None
s = http.server.HTTPServer(("127.0.0.1", 0), h)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
big_pid=$!
i=0
while [ ! -s "$tmp/big.port" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
big=http://127.0.0.1:$(cat "$tmp/big.port")
head -c 65536 /dev/zero | tr '\0' x >"$tmp/big/v1/checkpoint"
run "$bin" witness --server "$big" --key "$pub" --state "$tmp/wbig"
expect "witness: a checkpoint of 64 KiB is read" 1
has "witness: read, not a note" "$tmp/out" 'not a signed note'
head -c 65537 /dev/zero | tr '\0' x >"$tmp/big/v1/checkpoint"
run "$bin" witness --server "$big" --key "$pub" --state "$tmp/wbig"
expect "witness: a checkpoint past 64 KiB" 2
has "witness: too large" "$tmp/err" 'v1/checkpoint: answer too large'
kill "$big_pid" 2>/dev/null
wait "$big_pid" 2>/dev/null

echo "tlog_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
