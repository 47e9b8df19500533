#!/bin/sh
# Integration test of `gpuledger export` (DESIGN 8): a ledger built from the
# hand-written tests/export/billing.ndjson (a VM across an hour boundary, a
# pool scaled up and down, a pod going terminal, a claim allocated late),
# whose rows in tests/export/*.want were computed by hand; the three
# formats, rates, the log range and chain head of a row, sums across steps,
# ranges outside the log, and every usage error.
# Usage: tests/export_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
dir=$(dirname "$0")/export
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$(dirname "$0")/lib/cli.sh"
db=$tmp/db
day1=2026-03-01T00:00:00Z

lines() { # NAME FILE N
	n=$(wc -l <"$2")
	if [ "$n" -eq "$3" ]; then ok; else bad "$1: $n lines, want $3"; fi
}
# A usage error: exit 2, one message naming the problem, nothing on stdout.
refused() { # NAME REGEX ARGS...
	name=$1 re=$2
	shift 2
	run "$bin" export "$@"
	expect "$name" 2
	has "$name: message" "$tmp/err" "$re"
	if [ -s "$tmp/out" ]; then bad "$name: wrote to stdout"; else ok; fi
}
# Columns by name from a CSV with a header, in the order given (RFC 4180:
# Tags and SkuPriceDetails are quoted JSON).
cols() { # FILE COL...
	python3 -c 'import csv, sys
r = csv.DictReader(open(sys.argv[1]))
for row in r:
    print(",".join(row[c] for c in sys.argv[2:]))' "$@"
}

# --- the ledger ---------------------------------------------------------
run "$bin" import --db "$db" --create <"$dir/billing.ndjson"
expect "import" 0

# --- focus-csv, hourly, reserved ----------------------------------------
run "$bin" export --focus-version 1.2 --db "$db" --from $day1 --step hour
expect "hourly" 0
cp "$tmp/out" "$tmp/hourly.csv"
has "header" "$tmp/hourly.csv" '^BilledCost,BillingAccountId,BillingAccountName,BillingCurrency,BillingPeriodEnd,BillingPeriodStart,ChargeCategory,ChargeClass,ChargeDescription,ChargeFrequency,ChargePeriodEnd,ChargePeriodStart,ConsumedQuantity,ConsumedUnit,ContractedCost,ContractedUnitPrice,EffectiveCost,InvoiceIssuerName,ListCost,ListUnitPrice,PricingCategory,PricingQuantity,PricingUnit,ProviderName,PublisherName,ResourceId,ResourceName,ResourceType,ServiceCategory,ServiceName,ServiceSubcategory,SkuId,SkuMeter,SkuPriceDetails,SkuPriceId,SubAccountId,SubAccountName,SubAccountType,Tags,x_BillingPeriodStatus,x_TenantPath,x_DeviceClass,x_Basis,x_LedgerSeqStart,x_LedgerSeqEnd,x_ChainHead,x_DeviceMilliseconds$'
cols "$tmp/hourly.csv" ChargePeriodStart ChargePeriodEnd SubAccountId \
	x_DeviceClass ConsumedQuantity x_DeviceMilliseconds >"$tmp/got"
same "hourly rows" "$dir/hourly.want" "$tmp/got"
# The billing period is the calendar month, still open: the horizon (the
# TICK, not the later NOTE) is before its end.
cols "$tmp/hourly.csv" BillingPeriodStart BillingPeriodEnd ChargePeriodStart \
	ChargePeriodEnd SubAccountId ConsumedQuantity ListUnitPrice ListCost \
	BilledCost BillingCurrency ServiceName x_BillingPeriodStatus x_Basis \
	x_LedgerSeqStart x_LedgerSeqEnd x_DeviceMilliseconds >"$tmp/got"
has "billing period" "$tmp/got" '^2026-03-01T00:00:00Z,2026-04-01T00:00:00Z,2026-03-01T09:00:00Z,2026-03-01T10:00:00Z,tenant-acme-dev,1.000000000,0.000000000,0.000000000,0.000000000,USD,GPU Compute,open,reserved,5,7,3600000$'

# The row's log range and head: the states `replay --at` shows.
row=$(cols "$tmp/hourly.csv" ChargePeriodStart x_LedgerSeqEnd x_ChainHead |
	grep '^2026-03-01T13:00:00Z,')
seq_end=$(echo "$row" | cut -d, -f2)
head=$(echo "$row" | cut -d, -f3)
run "$bin" replay --db "$db" --at 2026-03-01T14:00:00Z --json
has "x_LedgerSeqEnd = replay --at ChargePeriodEnd" "$tmp/out" "\"seq\":$seq_end,"
has "x_ChainHead = its head" "$tmp/out" "\"chainHead\":\"$head\""
run "$bin" replay --db "$db" --at "$seq_end" --json
has "x_ChainHead = head at x_LedgerSeqEnd" "$tmp/out" "\"chainHead\":\"$head\""

# --- allocated ----------------------------------------------------------
run "$bin" export --focus-version 1.2 --db "$db" --from $day1 --to 2026-03-02T00:00:00Z \
	--basis allocated
expect "allocated" 0
cols "$tmp/out" ChargePeriodStart ChargePeriodEnd SubAccountId \
	x_DeviceClass ConsumedQuantity x_DeviceMilliseconds >"$tmp/got"
same "allocated rows" "$dir/allocated.want" "$tmp/got"

# --- daily with rollup and rates ----------------------------------------
run "$bin" export --focus-version 1.2 --db "$db" --from $day1 --step day --rollup subtree \
	--rates "$dir/rates.json" --currency USD
expect "daily rollup rated" 0
has "x_Scope column" "$tmp/out" ',x_DeviceMilliseconds,x_Scope$'
cols "$tmp/out" ChargePeriodStart ChargePeriodEnd SubAccountId \
	x_DeviceClass x_TenantPath x_DeviceMilliseconds ConsumedQuantity \
	ListCost BilledCost x_Scope >"$tmp/got"
same "daily rollup rows" "$dir/daily-rollup.want" "$tmp/got"
cp "$tmp/out" "$tmp/daily.csv"

# Hourly rows sum to daily rows, per namespace and class, to the ms.
sums() {
	cols "$1" SubAccountId x_DeviceClass x_DeviceMilliseconds |
		awk -F, '{ s[$1 "," $2] += $3 } END { for (k in s) print k "," s[k] }' |
		sort
}
run "$bin" export --focus-version 1.2 --db "$db" --from $day1 --step day
sums "$tmp/out" >"$tmp/day.sums"
sums "$tmp/hourly.csv" >"$tmp/hour.sums"
same "hours sum to days" "$tmp/day.sums" "$tmp/hour.sums"
# ... and a split of the range off the hour sums to the whole; times
# are floored to the second, so the split point's ms are nobody's loss.
run "$bin" export --focus-version 1.2 --db "$db" --from $day1 --to 2026-03-01T10:37:12.345Z
cp "$tmp/out" "$tmp/a.csv"
run "$bin" export --focus-version 1.2 --db "$db" --from 2026-03-01T10:37:12.345Z --step day
tail -n +2 "$tmp/out" >>"$tmp/a.csv"
sums "$tmp/a.csv" >"$tmp/split.sums"
same "a split sums to the whole" "$tmp/day.sums" "$tmp/split.sums"
cols "$tmp/a.csv" ChargePeriodStart ChargePeriodEnd >"$tmp/got"
has "split at the second" "$tmp/got" '^2026-03-01T10:37:12Z,2026-03-02T00:00:00Z$'

# --- other currencies and unpriced classes -------------------------------
refused "two currencies, none chosen" 'several currencies' --db "$db" \
	--from $day1 --rates "$dir/rates.json"
refused "a currency without rates" 'no rate in currency "GBP"' --db "$db" \
	--from $day1 --rates "$dir/rates.json" --currency GBP
# A class without a rate in the billing currency is an error, not a 0.
refused "EUR a10 unpriced" 'no EUR rate for class a10' --db "$db" \
	--from $day1 --step day --rates "$dir/rates.json" --currency EUR
jq '.rates += [{"class": "a10", "currency": "EUR", "listUnitPrice": "0"}]' \
	"$dir/rates.json" >"$tmp/eur.json"
run "$bin" export --focus-version 1.2 --db "$db" --from $day1 --step day \
	--rates "$tmp/eur.json" --currency EUR
expect "EUR" 0
cols "$tmp/out" SubAccountId x_DeviceClass ListUnitPrice ListCost BilledCost \
	BillingCurrency >"$tmp/got"
has "EUR h100 priced" "$tmp/got" '^tenant-acme-dev,h100,2.900000000,8.700000000,8.700000000,EUR$'
has "EUR a10 explicitly free" "$tmp/got" '^tenant-acme,a10,0.000000000,0.000000000,0.000000000,EUR$'

# --- json ---------------------------------------------------------------
run "$bin" export --focus-version 1.2 --db "$db" --from $day1 --format json
expect "json" 0
lines "json rows" "$tmp/out" 7
python3 - "$tmp/out" "$tmp/hourly.csv" >"$tmp/py" 2>&1 <<'PY'
import csv, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
with open(sys.argv[2]) as f:
    table = list(csv.DictReader(f))
assert len(rows) == len(table), (len(rows), len(table))
for j, c in zip(rows, table):
    assert set(j) == set(c) | {"x_Scope"}, set(j) ^ set(c)
    assert j["x_Scope"] == "namespace"
    for k, v in c.items():
        assert ("" if j[k] is None else str(j[k])) == v, (k, j[k], v)
    assert isinstance(j["x_DeviceMilliseconds"], int)
print("ok")
PY
has "json = csv" "$tmp/py" '^ok$'

# --- opencost-csv ---------------------------------------------------------
run "$bin" export --focus-version 1.2 --db "$db" --from $day1 --format opencost-csv \
	--rates "$dir/rates.json" --currency USD
expect "opencost" 0
same "opencost rows" "$dir/opencost.want" "$tmp/out"
refused "opencost hourly" 'daily' --db "$db" --from $day1 \
	--format opencost-csv --step hour
refused "opencost rollup" 'no subtree rows' --db "$db" --from $day1 \
	--format opencost-csv --rollup subtree

# --- ranges outside the log -----------------------------------------------
run "$bin" export --focus-version 1.2 --db "$db" --from 2025-01-01T00:00:00Z \
	--to 2025-02-01T00:00:00Z
expect "before the first event" 0
lines "before the first event: header only" "$tmp/out" 1
run "$bin" export --focus-version 1.2 --db "$db" --from 2026-03-02T02:00:00Z --format json
expect "after the horizon" 0
lines "after the horizon: nothing" "$tmp/out" 0
# A range shorter than asked says so on stderr, and GET /v1/export in a
# Warning header: what was billed and why (the horizon). Up to the horizon
# by default is the normal case and says nothing.
has "after the horizon: why nothing" "$tmp/err" \
	'^gpuledger: export: warning: nothing billed: the range starts at 2026-03-02T02:00:00Z, at or after the horizon 2026-03-0[12]T[0-9:.]*Z \(the time of the last event\)'
run "$bin" export --focus-version 1.2 --db "$db" --month 2026-03 --step day
expect "--month of the open month" 0
has "--month of the open month: what was billed" "$tmp/err" \
	'^gpuledger: export: warning: billed 2026-03-01T00:00:00Z to 2026-03-0[12]T[0-9:]*Z, not to 2026-04-01T00:00:00Z: the horizon is '
run "$bin" export --focus-version 1.2 --db "$db" --from $day1
if [ -s "$tmp/err" ]; then bad "up to the horizon: a warning: $(cat "$tmp/err")"; else ok; fi
start_server
for q in "month=2026-03&step=day" "from=2026-03-02T02:00:00Z"; do
	curl -s -D "$tmp/headers" -o /dev/null "http://127.0.0.1:$port/v1/export?$q"
	want="billed 2026-03-01T00:00:00Z to"
	case $q in from=*) want="nothing billed: the range starts at 2026-03-02T02:00:00Z" ;; esac
	has "GET /v1/export?$q: a Warning" "$tmp/headers" "^Warning: 199 gpuledger \"$want"
done
curl -s -D "$tmp/headers" -o /dev/null "http://127.0.0.1:$port/v1/export?from=$day1"
grep -qi '^Warning' "$tmp/headers" && bad "GET /v1/export up to the horizon: a Warning" || ok
stop_server
run "$bin" export --focus-version 1.2 --db "$db" --from 2026-04-01T00:00:00Z \
	--format opencost-csv
expect "opencost, nothing" 0
lines "opencost, nothing: header only" "$tmp/out" 1

# --- usage errors ---------------------------------------------------------
refused "no --from" '--from is required \(or --month YYYY-MM\)' --db "$db"
refused "--month and --from" '--month replaces --from and --to' --db "$db" \
	--month 2026-03 --from $day1
refused "bad --month" 'expected YYYY-MM' --db "$db" --month 2026-3
refused "bad --month" 'expected YYYY-MM' --db "$db" --month 2026-13
# --- times and months at the edges (DESIGN 7) -----------------------------
# Every time and month outside 1970..9999 is refused (exit 2 here, 400 over
# HTTP), and so is one within it that int64 nanoseconds cannot hold (after
# 2262-04-11T23:47:16.854775807Z): never arithmetic that overflows (a
# SANITIZE=undefined build would stop on it), never an arbitrary period.
toolong=99999999999999999999999999999999
for m in 1969-12:'expected YYYY-MM' 2262-04:'beyond what the ledger can date' \
	2262-05:'beyond what the ledger can date' \
	5000-01:'beyond what the ledger can date' \
	9999-12:'beyond what the ledger can date' \
	10000-01:'expected YYYY-MM' -1:'expected YYYY-MM' \
	$toolong:'expected YYYY-MM'; do
	refused "--month ${m%%:*}" "--month \"${m%%:*}\" .*${m#*:}" \
		--db "$db" --month "${m%%:*}"
done
echo '{"billingPeriodOffset": "+01:00"}' >"$tmp/east.json"
refused "--month 1970-01 at +01:00" 'starts before 1970' --db "$db" \
	--month 1970-01 --rates "$tmp/east.json"
for m in 1970-01 2262-03; do
	run "$bin" export --focus-version 1.2 --db "$db" --month $m
	expect "--month $m" 0
done
run "$bin" export --focus-version 1.2 --db "$db" --month 2026-03 --rates "$tmp/east.json"
expect "--month 2026-03 at +01:00" 0
for t in 1969-12-31:'before 1970' 1970-01-01T00:30:00+01:00:'before 1970' \
	2262-04-12:'beyond what the ledger can date' \
	5000-01-01:'beyond what the ledger can date' \
	9999-12-31T23:59:59Z:'beyond what the ledger can date' \
	10000-01-01:'not an RFC 3339 time' -1:'not an RFC 3339 time' \
	$toolong:'not an RFC 3339 time'; do
	v=${t%%:[bn]*}
	vre=${v%%+*} # the text as a regex: up to a "+"
	refused "--from $v" "--from \"$vre.*${t##*:}" --db "$db" --from "$v"
	refused "--to $v" "--to \"$vre.*${t##*:}" --db "$db" --from \
		1970-01-01 --to "$v"
	for cmd in replay eval; do
		run "$bin" $cmd --db "$db" --at "$v"
		expect "$cmd --at $v" 2
		has "$cmd --at $v: message" "$tmp/err" "--at \"$vre.*${t##*:}"
	done
done
run "$bin" export --focus-version 1.2 --db "$db" --from 1970-01-01 --to \
	2262-04-11T23:47:16.854775807Z
expect "--from 1970-01-01 --to the last nanosecond" 0
run "$bin" replay --db "$db" --at 2262-04-11T23:47:16.854775807Z
expect "replay --at the last nanosecond" 0
start_server
# hget NAME WANT QUERY [REGEX]: GET QUERY answered WANT (and REGEX in it).
hget() {
	code=$(curl -s -o "$tmp/body" -w '%{http_code}' \
		"http://127.0.0.1:$port/v1/$3")
	[ "$code" = "$2" ] && ok || bad "$1: HTTP $code, want $2 ($(head -c 200 "$tmp/body"))"
	[ -z "${4:-}" ] || has "$1: body" "$tmp/body" "$4"
}
for m in 1969-12:'expected YYYY-MM' 2262-04:'beyond what the ledger can date' \
	2262-05:beyond 5000-01:beyond 9999-12:beyond \
	10000-01:'expected YYYY-MM' -1:'expected YYYY-MM' \
	$toolong:'expected YYYY-MM'; do
	hget "month=${m%%:*}" 400 "export?month=${m%%:*}" \
		"^\\{\"error\":\"export: parameter month .*${m#*:}"
done
hget "month=1970-01" 200 "export?month=1970-01"
hget "month=2262-03" 200 "export?month=2262-03"
for t in 1969-12-31:'before 1970' 1970-01-01T00:30:00%2B01:00:'before 1970' \
	2262-04-12:beyond 5000-01-01:beyond 9999-12-31T23:59:59Z:beyond \
	10000-01-01:'not an RFC 3339' -1:'not an RFC 3339' \
	$toolong:'not an RFC 3339'; do
	v=${t%%:[bn]*}
	hget "from=$v" 400 "export?from=$v" \
		"^\\{\"error\":\"export: parameter from .*${t##*:}"
	hget "to=$v" 400 "export?from=1970-01-01&to=$v" \
		"^\\{\"error\":\"export: parameter to .*${t##*:}"
	hget "state?at=$v" 400 "state?at=$v" "^\\{\"error\":\"at: .*${t##*:}"
done
hget "state?at=the last nanosecond" 200 \
	"state?at=2262-04-11T23:47:16.854775807Z"
hget "the server is alive" 200 "tenants"
stop_server
if grep -q 'runtime error' "$tmp/serve.err"; then
	bad "serve: $(grep 'runtime error' "$tmp/serve.err" | head -3)"
else ok; fi
head -c 5000000 /dev/zero | tr '\0' ' ' >"$tmp/big.json"
refused "a huge billing file" 'larger than 4194304 bytes' --db "$db" \
	--from $day1 --rates "$tmp/big.json"
echo '{"billingPeriodOffset": "CET"}' >"$tmp/tz.json"
refused "bad offset" 'billingPeriodOffset' --db "$db" --month 2026-03 \
	--rates "$tmp/tz.json"
refused "bad --from" 'not an RFC 3339 time' --db "$db" --from yesterday
refused "bad --to" 'not an RFC 3339 time' --db "$db" --from $day1 --to 5
refused "--to before --from" '--to must be after --from' --db "$db" \
	--from $day1 --to 2026-02-01T00:00:00Z
refused "bad --step" 'expected hour or day' --db "$db" --from $day1 \
	--step week
refused "bad --basis" 'expected reserved or allocated' --db "$db" \
	--from $day1 --basis used
refused "bad --format" 'expected focus-csv' --db "$db" --from $day1 \
	--format xml
refused "bad --rollup" 'expected subtree' --db "$db" --from $day1 \
	--rollup tree
refused "bad --currency" 'three capital letters' --db "$db" --from $day1 \
	--currency usd
refused "no rates file" 'rates' --db "$db" --from $day1 \
	--rates "$tmp/none.json"
echo '{"rates": [{"class": "h100", "currency": "USD", "listUnitPrice": 2.5}]}' \
	>"$tmp/float.json"
refused "a float price" 'listUnitPrice must be a decimal string' \
	--db "$db" --from $day1 --rates "$tmp/float.json"
refused "no --db" '--db DIR is required' --from $day1
refused "missing db" 'No such file' --db "$tmp/nope" --from $day1
refused "unknown option" 'unknown option' --db "$db" --from $day1 --tenant x
# --- output that cannot be written -------------------------------------
# A failed write stops the export with one message naming its errno: the
# rows' callback returns LG_EIO and keeps the errno for the one report. The
# focus and JSON rows outgrow stdio's buffer, so the write fails in the
# middle of the export; the opencost rows go out at its end.
for fmt in focus-csv:hour json:hour opencost-csv:day; do
	"$bin" export --focus-version 1.2 --db "$db" --from $day1 --format "${fmt%:*}" \
		--step "${fmt#*:}" >/dev/full 2>"$tmp/err"
	rc=$?
	expect "$fmt to a full disk" 2
	has "$fmt to a full disk: errno" "$tmp/err" \
		'^gpuledger: export: writing the output failed: No space left on device$'
	n=$(wc -l <"$tmp/err")
	if [ "$n" -eq 1 ]; then ok; else
		bad "$fmt to a full disk: $n lines on stderr: $(head -c 300 "$tmp/err")"
	fi
done

run "$bin" export --help
expect "--help" 0
has "--help names the columns" "$tmp/out" 'x_DeviceMilliseconds'
has "--help documents rounding" "$tmp/out" 'rounded'

echo "export_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
