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
python3 "$dir/metamorphic.py" "$bin" "$tmp" 60 5 \
	"$dir/ingest/acme.ndjson" "$dir/ingest/classes.json" \
	"$dir/ingest/tables.ndjson" "$dir/ingest/classes.json" >"$tmp/mm.out"
n_ok=$(grep -c '^ok ' "$tmp/mm.out")
grep '^FAIL ' "$tmp/mm.out" | head -n 5 | while read -r line; do echo "$line"; done
n_bad=$(grep -c '^FAIL ' "$tmp/mm.out")
pass=$((pass + n_ok))
fail=$((fail + n_bad))
[ "$n_ok" -ge 300 ] && ok || bad "metamorphic: only $n_ok pairs passed"

echo "exactness_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
