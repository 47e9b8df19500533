#!/bin/sh
# Holds (DESIGN 3.7; issue 41) through the real binary, with the exact JSON:
#  - the issue's reduced case of reconciliation (3.6 amended, one
#    observation is one watch event): a VMInstance admitted with two
#    classes, observed as two RESERVEs at one time, is no bypass (exit 0;
#    before the fix: exit 1 with one bypass);
#  - `serve --holds 2m` appends the HOLDS event once (a restart with the
#    same flag appends nothing), admissions hold their units until the
#    watcher observes the object, GET /v1/holds, remaining's "held",
#    /metrics, `replay` (table and --json) show them; `--holds 0` ends them;
#  - with holds off the answers carry no "held" (the records as before).
# Usage: tests/holds_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
server_pid=
trap 'stop_server; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"
port=

# eq NAME WANT FILE: FILE holds exactly the line WANT.
eq() {
	printf '%s\n' "$2" >"$tmp/want"
	same "$1" "$tmp/want" "$3"
}

# ---------------------------------------------------------------- reduced
db=$tmp/reduced
cat >"$tmp/reduced.ndjson" <<'EOF'
{"type":"CLASS","class":"h200","definition":{"name":"h200","resourceNames":["nvidia.com/h200"]},"time":"2026-01-01T22:17:05Z"}
{"type":"CLASS","class":"l40s","definition":{"name":"l40s","resourceNames":["nvidia.com/l40s"]}}
{"type":"VERDICT","record":{"allowed":true,"basisSeq":2,"chainHead":"0000000000000000000000000000000000000000000000000000000000000000","checks":[],"id":1,"message":"namespace is not a tenant","reason":"NotATenant","request":{"kind":"VMInstance","name":"batch-k4t8","namespace":"cozy-system","new":{"gpus":[{"class":"l40s","count":1},{"class":"h200","count":2}]},"old":null},"type":"admission","warnings":[]}}
{"type":"RESERVE","namespace":"cozy-system","class":"h200","kind":"VMInstance","name":"batch-k4t8","uid":"u1","before":0,"after":2,"time":"2026-01-01T22:17:05.715600779Z"}
{"type":"RESERVE","namespace":"cozy-system","class":"l40s","kind":"VMInstance","name":"batch-k4t8","uid":"u1","before":0,"after":1,"time":"2026-01-01T22:17:05.715600779Z"}
EOF
run "$bin" import --db "$db" --create <"$tmp/reduced.ndjson"
expect "import the reduced case" 0
run "$bin" reconcile --db "$db"
expect "reduced case: no bypass, exit 0" 0
eq "reduced case: exactly" '{"range":{"fromSeq":1,"fromTime":"2026-01-01T22:17:05.000000000Z","since":{"seq":3,"time":"2026-01-01T22:17:05.000000000Z"},"toSeq":5,"toTime":"2026-01-01T22:17:05.715600779Z","windowMs":600000},"preExisting":[],"bypasses":[],"overshoots":[],"counts":{"admissionVerdicts":1,"bypasses":0,"events":5,"overshoots":0,"preExisting":0}}' "$tmp/out"

# holdExpired (DESIGN 3.6 amended): vm-a's hold expires (TTL 60 s) before
# the watcher sees it; vm-b is admitted on the budget it no longer holds;
# vm-a's observation takes the tenant over: the causes name the expired
# hold (its verdict, expiry and the observation's seq) and the race.
db=$tmp/expired
rec() { # ID NAME
	printf '{"type":"VERDICT","record":{"allowed":true,"basisSeq":0,"chainHead":"00","checks":[{"budget":2,"growth":2,"held":0,"key":"h200.gpuclass.cozystack.io/devices","ok":true,"remaining":0,"tenant":"tenant-acme","used":0}],"id":%s,"message":"within budget","reason":"WithinBudget","request":{"kind":"VMInstance","name":"%s","namespace":"tenant-acme","new":{"gpus":[{"class":"h200","count":2}]},"old":null},"type":"admission","warnings":[]}}\n' "$1" "$2"
}
obs() { # NAME
	printf '{"type":"RESERVE","namespace":"tenant-acme","class":"h200","kind":"VMInstance","name":"%s","uid":"u-%s","before":0,"after":2,"time":"2026-01-01T10:01:02Z"}\n' "$1" "$1"
}
{
	echo '{"type":"CLASS","class":"h200","definition":{"name":"h200","resourceNames":["nvidia.com/h200"]},"time":"2026-01-01T10:00:00Z"}'
	echo '{"type":"TENANT","namespace":"tenant-root","parent":null}'
	echo '{"type":"TENANT","namespace":"tenant-acme","parent":"tenant-root"}'
	echo '{"type":"BUDGET","namespace":"tenant-acme","key":"h200.gpuclass.cozystack.io/devices","value":2}'
	echo '{"type":"HOLDS","ttlMs":60000}'
	rec 1 vm-a
	echo '{"type":"TICK","time":"2026-01-01T10:01:01Z"}'
	rec 2 vm-b
	obs vm-b
	obs vm-a
} >"$tmp/expired.ndjson"
run "$bin" import --db "$db" --create <"$tmp/expired.ndjson"
expect "import the expired hold's history" 0
run "$bin" reconcile --db "$db"
expect "an overshoot: exit 1" 1
has "holdExpired: the verdict, its expiry, the observation's seq; and the race" "$tmp/out" '"causes":\[\{"expiresAt":"2026-01-01T10:01:00.000000000Z","seq":10,"type":"holdExpired","verdictId":1\},\{"seq":10,"type":"race","verdicts":\[1,2\]\}\]'
run "$bin" reconcile --db "$db" --format text
has "text: holdExpired" "$tmp/out" "^ +holdExpired at seq 10: verdict 1's hold expired at 2026-01-01T10:01:00.000000000Z$"

# ------------------------------------------------------------------ serve
# The world is dated ahead of the clock; a VERDICT's time is its basis
# event's (DESIGN 3.7), so the times below are the log's and every answer
# is exact.
db=$tmp/db
cat >"$tmp/world.ndjson" <<'EOF'
{"type":"CLASS","class":"h200","definition":{"name":"h200","resourceNames":["nvidia.com/h200"]},"time":"2099-01-01T10:00:00Z"}
{"type":"TENANT","namespace":"tenant-root","parent":null}
{"type":"TENANT","namespace":"tenant-acme","parent":"tenant-root"}
{"type":"BUDGET","namespace":"tenant-acme","key":"h200.gpuclass.cozystack.io/devices","value":4}
{"type":"RESERVE","namespace":"tenant-acme","class":"h200","kind":"VMInstance","name":"vm-o","uid":"u-o","before":0,"after":1,"time":"2099-01-01T10:00:01Z"}
{"type":"NOTE","code":"Synced","namespace":null,"kind":null,"name":null,"message":"listed"}
EOF
run "$bin" import --db "$db" --create <"$tmp/world.ndjson"
expect "import the world" 0
run "$bin" serve --db "$db" --holds 2x
expect "serve --holds 2x: a usage error" 2
has "serve --holds 2x: says why" "$tmp/err" 'not 0 or a duration'
run "$bin" serve --db "$db" --holds 1500us
expect "serve --holds 1500us: whole milliseconds only" 2

up() {
	start_server "$@"
	url=http://127.0.0.1:$port
}
up --holds 2m
run "$bin" log --db "$db" --from 7
eq "serve --holds 2m appended the mode at the log's time" '{"seq":7,"time":"2099-01-01T10:00:01.000000000Z","ttlMs":120000,"type":"HOLDS"}' "$tmp/out"
vmi() { # NAME OLD NEW
	printf '{"namespace":"tenant-acme","kind":"VMInstance","name":"%s","old":%s,"new":%s}' "$1" "$2" "$3"
}
g() { printf '{"gpus":[{"class":"h200","count":%s}]}' "$1"; }
post() {
	curl -s -X POST --data-binary "$1" "$url/v1/admission" >"$tmp/out"
	echo >>"$tmp/out"
}
get() {
	curl -s "$url$1" >"$tmp/out"
	echo >>"$tmp/out"
}
post "$(vmi vm-x null "$(g 2)")"
has "create 2: allowed, held 0 in its check" "$tmp/out" '"checks":\[\{"budget":4,"growth":2,"held":0,"key":"h200.gpuclass.cozystack.io/devices","ok":true,"remaining":1,"tenant":"tenant-acme","used":1\}\]'
post "$(vmi vm-x "$(g 2)" "$(g 3)")"
has "update 2->3: counts vm-x at max(0, 2), allowed" "$tmp/out" '"allowed":true,.*"held":2,.*"remaining":0'
post "$(vmi vm-x "$(g 3)" "$(g 5)")"
has "update 3->5: denied, 1 + 3 + 2 > 4" "$tmp/out" '"message":"tenant-acme: h200.gpuclass.cozystack.io/devices 1 \+ 3 \+ 2 > 4"'
get /v1/holds
eq "GET /v1/holds" '{"holds":[{"expiresAt":"2099-01-01T10:02:01.000000000Z","kind":"VMInstance","name":"vm-x","namespace":"tenant-acme","units":{"h200":3},"verdictId":2}],"horizon":"2099-01-01T10:00:01.000000000Z","on":true,"seq":10,"ttlMs":120000}' "$tmp/out"
get '/v1/holds?tenant=tenant-beta'
has "GET /v1/holds?tenant=: the subtree only" "$tmp/out" '"holds":\[\]'
curl -s -o /dev/null -w '%{http_code}\n' "$url/v1/holds?tenant=Bad" >"$tmp/out"
eq "GET /v1/holds?tenant=Bad: 400" 400 "$tmp/out"
get /v1/tenants/tenant-acme/remaining
eq "remaining: held in limitedBy's subtree" '{"classes":{"h200":{"blocked":false,"held":3,"limitedBy":{"key":"h200.gpuclass.cozystack.io/devices","tenant":"tenant-acme"},"remaining":0}},"total":{"held":null,"limitedBy":null,"remaining":null}}' "$tmp/out"
get /metrics
has "metrics: alive" "$tmp/out" '^gpuledger_holds_alive 1$'
has "metrics: ended by replacement" "$tmp/out" '^gpuledger_holds_ended_total\{how="replacement"\} 1$'
has "metrics: subtree held" "$tmp/out" '^gpuledger_tenant_subtree_held\{tenant="tenant-acme",class="h200"\} 3$'
stop_server
# A checkpoint with the hold alive (format version 2): verify replays the
# log from genesis against it, and a state rebuilt from it and the tail is
# the same.
run "$bin" replay --db "$db" --json
cp "$tmp/out" "$tmp/replay10"
run "$bin" checkpoint --db "$db"
expect "checkpoint with a hold alive" 0
run "$bin" verify --db "$db"
expect "verify: the checkpoint is the replay" 0
run "$bin" replay --db "$db" --json
same "replay from the checkpoint = from genesis" "$tmp/replay10" "$tmp/out"

# The watcher observes vm-x: its hold ends, remaining is what it uses.
printf '%s\n' '{"type":"RESERVE","namespace":"tenant-acme","class":"h200","kind":"VMInstance","name":"vm-x","uid":"u-x","before":0,"after":3,"time":"2099-01-01T10:00:09Z"}' >"$tmp/obs.ndjson"
run "$bin" import --db "$db" <"$tmp/obs.ndjson"
expect "the watcher observes vm-x" 0
run "$bin" replay --db "$db" --json --at 10
has "replay --at 10 (before it): vm-x's hold" "$tmp/out" '"holds":\{"alive":\[\{"expiresAt":"2099-01-01T10:02:01.000000000Z","kind":"VMInstance","name":"vm-x","namespace":"tenant-acme","units":\{"h200":3\},"verdictId":2\}\],"ttlMs":120000\}'
run "$bin" replay --db "$db" --json
has "replay --json: no hold left" "$tmp/out" '"holds":\{"alive":\[\],"ttlMs":120000\}'
has "replay --json: tenant held members" "$tmp/out" '"held":\{\},.*"subtreeHeld":\{\}'
up --holds 2m
run "$bin" log --db "$db" --from 12
[ ! -s "$tmp/out" ] && ok || bad "a restart with the same --holds appended $(cat "$tmp/out")"
post "$(vmi vm-y null "$(g 1)")"
has "4 of 4 used: one more is denied" "$tmp/out" '"allowed":false'
get /v1/tenants/tenant-acme/remaining
has "remaining 0, nothing held" "$tmp/out" '"h200":\{"blocked":false,"held":0,.*"remaining":0\}'
stop_server
run "$bin" replay --db "$db"
has "replay table: the holds line" "$tmp/out" '^holds on, TTL 120000 ms: 0 alive$'

# --holds 0 turns them off: the answers lose "held".
up --holds 0
run "$bin" log --db "$db" --from 13
has "--holds 0 appended the mode off" "$tmp/out" '"ttlMs":0,"type":"HOLDS"'
get /v1/tenants/tenant-acme/remaining
eq "remaining with holds off: as before holds" '{"classes":{"h200":{"blocked":false,"limitedBy":{"key":"h200.gpuclass.cozystack.io/devices","tenant":"tenant-acme"},"remaining":0}},"total":{"limitedBy":null,"remaining":null}}' "$tmp/out"
stop_server
run "$bin" audit --db "$db"
expect "audit re-derives every verdict, held and all" 0
run "$bin" verify --db "$db"
expect "verify" 0

# The promise on a single pod: 60 admissions of 1 at once into 10 left,
# judged in groups, each verdict on the state after the ones before it
# (DESIGN 3.7): exactly 10 allowed, and 10 holds.
db=$tmp/burst
{
	echo '{"type":"CLASS","class":"h200","definition":{"name":"h200","resourceNames":["nvidia.com/h200"]},"time":"2099-01-01T10:00:00Z"}'
	echo '{"type":"TENANT","namespace":"tenant-root","parent":null}'
	echo '{"type":"TENANT","namespace":"tenant-acme","parent":"tenant-root"}'
	echo '{"type":"BUDGET","namespace":"tenant-acme","key":"h200.gpuclass.cozystack.io/devices","value":10}'
	echo '{"type":"NOTE","code":"Synced","namespace":null,"kind":null,"name":null,"message":"listed"}'
} | "$bin" import --db "$db" --create >/dev/null 2>&1 || bad "import the burst's world"
up --holds 2m
python3 - "$port" >"$tmp/burst.out" <<'PYEOF'
import json, sys, threading, urllib.request
port, allowed, lock = sys.argv[1], [], threading.Lock()
def one(i):
    body = {"namespace": "tenant-acme", "kind": "VMInstance", "name": "b-%d" % i,
            "old": None, "new": {"gpus": [{"class": "h200", "count": 1}]}}
    rq = urllib.request.Request("http://127.0.0.1:%s/v1/admission" % port,
                                data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(rq, timeout=20) as a:
        if json.loads(a.read())["allowed"]:
            with lock:
                allowed.append(i)
ts = [threading.Thread(target=one, args=(i,)) for i in range(60)]
for t in ts: t.start()
for t in ts: t.join()
print(len(allowed))
PYEOF
is_eq() { if [ "$2" = "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi; }
is_eq "a burst of 60 into 10 left on one pod: 10 allowed" "$(cat "$tmp/burst.out")" 10
get /v1/holds
is_eq "a burst on one pod: 10 holds" "$(jq '.holds | length' "$tmp/out")" 10
stop_server
run "$bin" audit --db "$db"
expect "the burst: audit re-derives every verdict" 0
# `gpuledger verdicts` says what the holds counted: a HELD column (the most
# units others held in a check's subtree); a denial after the 10 saw 10.
run "$bin" verdicts --db "$db" --allowed false --limit 1
has "verdicts: a HELD column with holds on" "$tmp/out" '^ID +SEQ +TIME +ANSWER +REASON +TYPE +NAMESPACE +OBJECT +REQUESTER +HELD$'
has "verdicts: a denial after the 10 counted 10 held" "$tmp/out" ' 10$'

echo "holds_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
