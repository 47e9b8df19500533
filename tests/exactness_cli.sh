#!/bin/sh
# Integration test of issue 10, "Exactness under reordering and hostile
# input", with the real binary:
#  - the metamorphic test of DESIGN 2.3 "Order independence"
#    (tests/metamorphic.py): for 60 seeds x 5 cuts of `simulate --churn`
#    (class-table changes adding and removing raw names, device plugins
#    leaving under bound pods, recreated objects, coverage changes) and for
#    the tests/ingest fixtures, the stream up to the cut and a snapshot of it
#    give the same replay --json, listing every live Node;
#  - the bounds of DESIGN 2.3 "Bounds" (UnitsTooLarge, no negative count,
#    the 1000-device admission denied, eval and POST /v1/admission);
#  - untrusted time (DESIGN 4.1): TimeWentBack and the export warning;
#  - `log` on a ledger without seq 1; the raw-entry admission warning.
# Usage: tests/exactness_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
dir=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$dir/lib/cli.sh"

# --- order independence ------------------------------------------------------
python3 "$dir/metamorphic.py" "$bin" "$tmp" ${MM_SEEDS:-60} 5 \
	"$dir/ingest/acme.ndjson" "$dir/ingest/classes.json" \
	"$dir/ingest/tables.ndjson" "$dir/ingest/classes.json" >"$tmp/mm.out"
n_ok=$(grep -c '^ok ' "$tmp/mm.out")
grep '^FAIL ' "$tmp/mm.out" | head -n 5 | while read -r line; do echo "$line"; done
n_bad=$(grep -c '^FAIL ' "$tmp/mm.out")
pass=$((pass + n_ok))
fail=$((fail + n_bad))
[ "$n_ok" -ge $((${MM_SEEDS:-60} * 5)) ] && ok || bad "metamorphic: only $n_ok pairs passed"

# --- a live server on an ephemeral loopback port -----------------------------
server_pid=
port=
trap 'stop_server; rm -rf "$tmp"' EXIT

# --- bounds (DESIGN 2.3): the wrapped case of issue 10 -------------------------
cat >"$tmp/classes.json" <<'EOF2'
{"classes": [{"name": "t4", "resourceNames": ["nvidia.com/A10-24Q"]}]}
EOF2
pod() { # NAME UID QUANTITY
	printf '{"type":"ADDED","time":"2026-03-02T09:00:%02dZ","object":{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"tenant-a","name":"%s","uid":"%s"},"spec":{"containers":[{"name":"m","resources":{"requests":{"nvidia.com/A10-24Q":"%s"}}}]},"status":{"phase":"Pending"}}}\n' \
		"$4" "$1" "$2" "$3"
}
{
	echo '{"type":"ADDED","time":"2026-03-02T09:00:00Z","object":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"tenant-a"}}}'
	echo '{"type":"ADDED","time":"2026-03-02T09:00:01Z","object":{"apiVersion":"apps.cozystack.io/v1alpha1","kind":"Tenant","metadata":{"namespace":"tenant-root","name":"a"},"spec":{"resourceQuotas":{"t4.gpuclass.cozystack.io/devices":"16"}}}}'
	pod p1 u1 9223372036854775807 10
	pod p2 u2 8 11
} >"$tmp/wrap.ndjson"
run "$bin" watch --db "$tmp/wrap" --from "$tmp/wrap.ndjson" --classes "$tmp/classes.json"
expect "wrap: watch" 0
"$bin" log --db "$tmp/wrap" >"$tmp/wrap.log"
has "wrap: UnitsTooLarge names the pod" "$tmp/wrap.log" '"code":"UnitsTooLarge".*"name":"p1"'
run "$bin" replay --db "$tmp/wrap" --json
expect "wrap: replay" 0
python3 -c 'import json, sys
def ints(v):
    if isinstance(v, bool): return
    if isinstance(v, int): yield v
    elif isinstance(v, dict):
        for x in v.values(): yield from ints(x)
    elif isinstance(v, list):
        for x in v: yield from ints(x)
d = json.load(sys.stdin)
# remaining may be negative by design (3.3); counts may not.
for t in d["tenants"]: t.pop("remaining"); t.pop("remainingTotal")
sys.exit(1 if any(i < 0 for i in ints(d)) else 0)' <"$tmp/out" &&
	ok || bad "wrap: a negative count in replay"
has "wrap: tenant-a uses 8" "$tmp/out" '"reserved":\{"t4":8\}'
adm='{"namespace":"tenant-a","kind":"VMInstance","name":"v","old":null,"new":{"gpus":[{"class":"t4","count":1000}]}}'
echo "{\"function\":\"Admission\",\"input\":$adm}" |
	"$bin" eval --db "$tmp/wrap" >"$tmp/eval.out"
has "wrap: eval denies 1000 devices" "$tmp/eval.out" '"allowed":false.*"reason":"ClassBudgetExceeded"'
huge='{"namespace":"tenant-a","kind":"VMInstance","name":"v","old":null,"new":{"gpus":[{"class":"t4","count":2147483648}]}}'
echo "{\"function\":\"Admission\",\"input\":$huge}" |
	"$bin" eval --db "$tmp/wrap" >"$tmp/eval.out"
has "wrap: 2^31 devices are Invalid" "$tmp/eval.out" '"reason":"Invalid"'
raw='{"namespace":"tenant-a","kind":"VMInstance","name":"v","old":null,"new":{"gpus":[{"name":"nvidia.com/A10-24Q"}]}}'
echo "{\"function\":\"Admission\",\"input\":$raw}" |
	"$bin" eval --db "$tmp/wrap" >"$tmp/eval.out"
has "raw entry: NoGrowth with a warning" "$tmp/eval.out" '"reason":"NoGrowth".*"warnings":\["spec.gpus\[0\]: raw entry nvidia.com/A10-24Q reserves nothing itself; it is counted once its pod exists"\]'
run "$bin" verify --db "$tmp/wrap"
expect "wrap: verify" 0
db=$tmp/wrap
start_server
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST \
	-H 'Content-Type: application/json' --data-binary "$adm" \
	"http://127.0.0.1:$port/v1/admission")
[ "$code" = 200 ] && ok || bad "wrap: POST /v1/admission: HTTP $code"
has "wrap: POST /v1/admission denies" "$tmp/body" '"allowed":false'
stop_server

# --- time that cannot be trusted (DESIGN 4.1) -------------------------------
# Two days of a pod holding one device; one line dated a year ahead.
python3 - "$tmp/year.ndjson" <<'EOF2'
import json, sys
ev = lambda t, typ, o: json.dumps({"type": typ, "time": t, "object": o})
ns = lambda n: {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
pod = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"namespace": "tenant-a", "name": "p", "uid": "u"},
       "spec": {"nodeName": "n1", "containers": [{"name": "m", "resources":
                {"limits": {"nvidia.com/A10-24Q": "1"}}}]}}
out = [ev("2026-03-01T00:00:00Z", "ADDED", ns("tenant-a")),
       ev("2026-03-01T00:00:00Z", "ADDED", pod),
       ev("2027-03-01T00:00:00Z", "ADDED", ns("tenant-x"))]
for h in range(1, 48):
    out.append(ev("2026-03-%02dT%02d:00:00Z" % (1 + h // 24, h % 24),
                  "ADDED", ns("tenant-b%d" % h)))
open(sys.argv[1], "w").write("\n".join(out) + "\n")
EOF2
run "$bin" watch --db "$tmp/year" --from "$tmp/year.ndjson" --classes "$tmp/classes.json"
expect "year: watch" 0
"$bin" log --db "$tmp/year" >"$tmp/year.log"
n=$(grep -c '"code":"TimeWentBack"' "$tmp/year.log")
[ "$n" = 1 ] && ok || bad "year: $n TimeWentBack NOTEs, want 1"
has "year: the NOTE gives the step" "$tmp/year.log" '"code":"TimeWentBack".*31532400\.000000000 s before'
run "$bin" export --db "$tmp/year" --from 2026-03-01T00:00:00Z --step day
expect "year: export" 0
has "year: export warns on stderr" "$tmp/err" 'warning: the range holds 1 TimeWentBack NOTE'
run "$bin" export --db "$tmp/year" --from 2026-03-01T00:00:00Z --to 2026-03-01T00:30:00Z --step hour
expect "year: export before the jump" 0
grep -q TimeWentBack "$tmp/err" && bad "year: a warning for a range without the NOTE" || ok
db=$tmp/year
start_server
curl -s -D "$tmp/headers" -o "$tmp/body" \
	"http://127.0.0.1:$port/v1/export?from=2026-03-01T00:00:00Z&step=day"
has "year: HTTP Warning header" "$tmp/headers" '^Warning: 199 gpuledger "the range holds 1 TimeWentBack'
curl -s -D "$tmp/headers" -o "$tmp/body" \
	"http://127.0.0.1:$port/v1/export?from=2026-03-01T00:00:00Z&to=2026-03-01T00:30:00Z&step=hour"
grep -q '^Warning' "$tmp/headers" && bad "year: a Warning header without the NOTE" || ok
stop_server

echo "exactness_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
