#!/bin/sh
# DuckDB, as an analyst loads it, takes both FOCUS versions of `gpuledger
# export` with the documented types: on a small simulated month exported as
# 1.2 and as 1.3 (with rates), DuckDB (npm @duckdb/node-api, a prebuilt
# DuckDB, installed here by npm into build/npm-duckdb on first use, version
# pinned by tests/duckdb/package.json) loads each CSV with an explicit
# schema and strict parsing (tests/duckdb/load.mjs: decimals with 9
# decimals for costs, prices and quantities, TIMESTAMP in FOCUS's exact
# YYYY-MM-DDTHH:mm:ssZ, JSON for the JSON columns, integers for seqs and
# device-ms), and tests/duckdb/check.py reads the CSV independently
# (Python's decimal): the row count, the exact sums of the cost and
# quantity columns and of the device-ms, every decimal read back as
# written, and in 1.3 each pool's AllocatedRatios summing to exactly 1.
# Then copies broken one value at a time (a DateTime without its Z, a cost
# "1,5", JSON that is not, ...) must each fail the load, naming the column,
# and those that DuckDB loads by rounding (a cost with a 10th decimal,
# device-ms with a fraction) or that are wrong but well typed (a ratio
# 1e-12 off) must fail the checks.
# Usage: tests/duckdb_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$root/tests/lib/cli.sh"
need_cmds duckdb_cli node npm python3 jq
check=$root/tests/duckdb/check.py

# npm_duckdb ROOT: tests/duckdb/package.json's packages installed into
# ROOT/build/npm-duckdb when missing or when the pinned version changed
# (as npm_schema does for the schemas), with load.mjs beside them (a
# script must sit beside node_modules to resolve them). Sets $mods.
npm_duckdb() {
	mods=$1/build/npm-duckdb
	if ! cmp -s "$1/tests/duckdb/package.json" "$mods/package.json" ||
		[ ! -d "$mods/node_modules/@duckdb/node-api" ]; then
		rm -rf "$mods"
		mkdir -p "$mods"
		cp "$1/tests/duckdb/package.json" "$mods/"
		if ! (cd "$mods" && npm install --no-audit --no-fund --silent) \
			>"$mods/npm.out" 2>&1; then
			echo "FAIL: npm install: $(tail -5 "$mods/npm.out")"
			rm -f "$mods/package.json" # try again next time
			return 1
		fi
	fi
	cp "$1/tests/duckdb/load.mjs" "$mods/"
}
if ! npm_duckdb "$root"; then
	echo "duckdb_cli: 0 passed, 1 failed"
	exit 1
fi

# load NAME VERSION FILE: DuckDB's report on FILE in $tmp/NAME.json, its
# stderr in $tmp/NAME.err; status 0 loaded and read, 1 refused, 3 a query
# after the load failed, other: node broke.
load() {
	node "$mods/load.mjs" "$2" "$3" >"$tmp/$1.json" 2>"$tmp/$1.err"
}

# --- a simulated month, as tests/focus_cli.sh builds it ---------------------
db=$tmp/db
run "$bin" simulate --seed 12 --events 3000 --tenants 8 \
	--start 2026-01-01T00:00:00Z --end 2026-02-01T00:00:00Z \
	--out "$tmp/month.ndjson"
expect "simulate" 0
run "$bin" watch --from "$tmp/month.ndjson" --db "$db"
expect "watch" 0
# A rate for every class, h100 with a negotiated price, so that costs are
# not all 0 and ListCost differs from BilledCost.
"$bin" replay --db "$db" --json | jq '{rates: [.classes[] | {class: .name,
	currency: "EUR", listUnitPrice: "2.75", billedUnitPrice:
	(if .name == "h100" then "2.125" else "2.75" end)}]}' >"$tmp/rates.json"

# --- each version loads, with the documented types -------------------------
# Hourly and daily rows; the daily ones (a few hundred) are also what the
# broken copies below start from ($tmp/VERSION.csv).
for v in 1.2 1.3; do
	for step in hour day; do
		run "$bin" export --focus-version "$v" --db "$db" \
			--month 2026-01 --step "$step" --rates "$tmp/rates.json"
		expect "export $v by $step" 0
		f=$tmp/$v-$step.csv
		cp "$tmp/out" "$f"
		load "$v-$step" "$v" "$f"
		lrc=$?
		if [ $lrc -eq 0 ]; then ok; else
			bad "$v by $step: DuckDB did not load it (exit $lrc):" \
				"$(jq -r .error "$tmp/$v-$step.json" 2>/dev/null |
					head -c 600)" "$(head -c 600 "$tmp/$v-$step.err")"
		fi
		if python3 "$check" compare "$v" "$f" "$tmp/$v-$step.json" \
			>"$tmp/cmp" 2>&1; then ok; else
			bad "$v by $step: DuckDB and the CSV disagree:" \
				"$(head -c 800 "$tmp/cmp")"
		fi
		echo "duckdb_cli: FOCUS $v by $step: $(jq -r '"\(.rows) rows" +
			if .pools != [] then ", \(.pools | length) pools"
			else "" end' "$tmp/$v-$step.json" 2>/dev/null)"
	done
	cp "$tmp/$v-day.csv" "$tmp/$v.csv"
done

# --- a broken value fails the load ------------------------------------------
# refused VERSION CASE COLUMN: a copy of the VERSION export broken as
# check.py's CASE says must not load, and the error must name the COLUMN
# whose value did not convert (or, for "header", the header). The copy of
# case "same" is byte for byte the export, so the copies differ from it
# only where broken.
refused() {
	python3 "$check" break "$2" "$tmp/$1.csv" "$tmp/b.csv"
	load b "$1" "$tmp/b.csv"
	lrc=$?
	if [ $lrc -eq 1 ] && jq -e '.loaded == false' "$tmp/b.json" \
		>/dev/null 2>&1 && jq -r .error "$tmp/b.json" | grep -q -e \
		"^Error when converting column \"$3\"\. " -e "^the $3 is not"
	then ok; else
		bad "$1, $2: want a load refused naming $3, got exit $lrc:" \
			"$(head -c 400 "$tmp/b.json") $(head -c 300 "$tmp/b.err")"
	fi
}
for v in 1.2 1.3; do
	python3 "$check" break same "$tmp/$v.csv" "$tmp/same.csv"
	same "$v: an unbroken copy is the export" "$tmp/$v.csv" "$tmp/same.csv"
	refused "$v" time-without-z ChargePeriodStart
	refused "$v" time-with-offset BillingPeriodEnd
	refused "$v" time-fraction ChargePeriodEnd
	refused "$v" cost-decimal-comma BilledCost
	refused "$v" quantity-with-unit PricingQuantity
	refused "$v" price-placeholder ListUnitPrice
	refused "$v" tags-not-json Tags
	refused "$v" drop:SkuId header
done
refused 1.3 details-not-json AllocatedMethodDetails

# --- and what loads but is wrong fails the checks ---------------------------
# bites VERSION CASE WORD: the broken copy loads, and check.py says WORD.
bites() {
	python3 "$check" break "$2" "$tmp/$1.csv" "$tmp/b.csv"
	load b "$1" "$tmp/b.csv"
	lrc=$?
	python3 "$check" compare "$1" "$tmp/b.csv" "$tmp/b.json" >"$tmp/cmp" 2>&1
	crc=$?
	if [ $lrc -eq 0 ] && [ $crc -eq 1 ] && grep -q -- "$3" "$tmp/cmp"; then
		ok
	else
		bad "$1, $2: want it loaded and '$3' found, got load exit $lrc," \
			"check exit $crc: $(head -c 400 "$tmp/cmp")"
	fi
}
# DuckDB rounds a 10th decimal into DECIMAL(38,9), and a fraction into an
# integer, rather than refusing them: the values read back and the sums
# differ from the CSV's.
bites 1.2 cost-ten-decimals "ListCost of row 1: DuckDB reads"
bites 1.3 cost-ten-decimals "SUM(ListCost)"
bites 1.2 ms-fraction "SUM(x_DeviceMilliseconds)"
bites 1.3 ms-fraction "SUM(x_DeviceMilliseconds)"
bites 1.3 ratio-off "AllocatedRatios of its"

echo "duckdb_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
