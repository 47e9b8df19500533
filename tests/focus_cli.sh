#!/bin/sh
# FOCUS 1.2 and 1.3 conformance and exactness of `gpuledger export` (DESIGN 8), on
# a small simulated month: tests/focus_check.py, a checker written from the
# specification text, must find no MUST violation in any export (hourly and
# daily, with and without rates, --rollup subtree, a configured offset and
# region, NDJSON, and over HTTP, where a tenant token exports its own
# subtree and the billing file is reloaded when it changes). The checker is
# first shown to catch a violation of each kind it checks. Exactness: the
# device-ms of the month equal the sum of its days and of its hours, and
# exports cut at the horizon of a growing ledger add up to one export of
# the whole. The 1.2 output is pinned byte for byte (hashes of what the
# last 1.2-only build, 79122f9, wrote); 1.3, the default, is checked with
# the checker's 1.3 rules, which are shown to bite too.
# Usage: tests/focus_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
here=$(cd "$(dirname "$0")" && pwd)
check=$here/focus_check.py
tmp=$(mktemp -d)
server_pid=
trap '[ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"
db=$tmp/db
feats=usage,resources,resource-types,skus,unit-prices,negotiated-prices
feats=$feats,pricing-categories,sub-accounts,sub-account-types,tags
lacks=commitment-discounts,capacity-reservations,pricing-currency
lacks=$lacks,billing-account-types,availability-zones

# conforms NAME FILE [CHECKER OPTIONS...]: 0 MUST violations.
conforms() {
	name=$1 f=$2
	shift 2
	python3 "$check" "$f" --features "$feats" --lacks "$lacks" \
		--tag-prefix gpuledger/ "$@" >"$tmp/check" 2>&1
	if [ $? -eq 0 ] && grep -q ' 0 MUST violations' "$tmp/check"; then
		ok
	else
		bad "$name: $(grep -v '^SHOULD' "$tmp/check" | head -c 600)"
	fi
	rows=$(sed -n 's/.*: \([0-9]*\) rows,.*/\1/p' "$tmp/check")
	if [ "${rows:-0}" -gt 0 ]; then ok; else bad "$name: no rows"; fi
}

# --- the checker bites ---------------------------------------------------
# One row as gpuledger writes it, then one mutation per rule: each must be
# reported under that rule, and the row itself must pass.
run "$bin" import --db "$tmp/small" --create <"$here/export/billing.ndjson"
expect "small ledger" 0
run "$bin" export --focus-version 1.2 --db "$tmp/small" --from 2026-03-01T00:00:00Z \
	--rates "$here/export/rates.json" --currency USD --step day
expect "small export" 0
cp "$tmp/out" "$tmp/one.csv"
conforms "unmutated" "$tmp/one.csv" --rates "$here/export/rates.json" \
	--offset Z
python3 - "$check" "$tmp/one.csv" "$here/export/rates.json" \
	>"$tmp/bites" 2>&1 <<'PY'
import csv, importlib.util, io, json, sys
spec = importlib.util.spec_from_file_location("fc", sys.argv[1])
fc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fc)
rows = list(csv.DictReader(open(sys.argv[2])))
feats = set("usage,resources,resource-types,skus,unit-prices,"
            "negotiated-prices,pricing-categories,sub-accounts,"
            "sub-account-types,tags".split(","))
lacks = {"commitment-discounts", "capacity-reservations"}

def write(rs, cols=None):
    cols = cols or list(rs[0])
    f = io.StringIO()
    w = csv.DictWriter(f, cols, lineterminator="\n")
    w.writeheader()
    for r in rs:
        w.writerow({k: r.get(k, "") for k in cols})
    open(sys.argv[2] + ".m", "w").write(f.getvalue())
    return sys.argv[2] + ".m"

def first(**kw):
    rs = [dict(r) for r in rows]
    rs[0].update(kw)
    return rs

def priced(change):
    """The rows with the first one whose prices and quantity are not 0
    changed."""
    rs = [dict(r) for r in rows]
    i = next(i for i, r in enumerate(rs)
             if fc.D(r["ListUnitPrice"]) != 0 and
             fc.D(r["ContractedUnitPrice"]) != 0 and
             fc.D(r["PricingQuantity"]) != 0)
    rs[i] = change(rs[i])
    return rs

cases = [
    ("drop ProviderName", lambda: write(rows, [c for c in rows[0]
                                               if c != "ProviderName"]),
     "ProviderName MUST be present"),
    ("drop SkuId", lambda: write(rows, [c for c in rows[0] if c != "SkuId"]),
     "SkuId MUST be present"),
    ("invented column", lambda: write(
        [dict(r, CommitmentDiscountId="") for r in rows]),
     "CommitmentDiscountId present although"),
    ("custom without x_", lambda: write([dict(r, Shard="1") for r in rows]),
     "custom columns are prefixed with x_"),
    ("fractional time", lambda: write(first(
        ChargePeriodStart="2026-03-01T00:00:00.500Z")),
     "ChargePeriodStart is YYYY-MM-DDTHH:mm:ssZ"),
    ("offset time", lambda: write(first(
        ChargePeriodEnd="2026-03-02T00:00:00+00:00")),
     "ChargePeriodEnd is YYYY-MM-DDTHH:mm:ssZ"),
    ("null BilledCost", lambda: write(first(BilledCost="")),
     "BilledCost MUST NOT be null"),
    ("placeholder", lambda: write(first(ChargeDescription="N/A")),
     "no placeholder values"),
    ("comma number", lambda: write(first(PricingQuantity="1,5")),
     "PricingQuantity conforms to NumericFormat"),
    ("plus sign", lambda: write(first(ListCost="+1.0")),
     "ListCost conforms to NumericFormat"),
    ("bad category", lambda: write(first(ServiceCategory="GPU")),
     "ServiceCategory MUST be one of the allowed values"),
    ("bad charge class", lambda: write(first(ChargeClass="Refund")),
     "ChargeClass MUST be one of the allowed values"),
    ("bad subcategory parent", lambda: write(first(
        ServiceSubcategory="Block Storage")),
     "ServiceSubcategory's parent"),
    ("currency", lambda: write(first(BillingCurrency="usd")),
     "BillingCurrency is an ISO 4217"),
    ("list cost", lambda: write(first(ListCost="123.000000000")),
     "ListCost = ListUnitPrice x PricingQuantity"),
    ("contracted cost", lambda: write(first(ContractedCost="0.000000001")),
     "ContractedCost = ContractedUnitPrice x PricingQuantity"),
    # Exact at the written scale: one unit of the 9th decimal is a
    # violation (a cost from a quantity the row does not show).
    ("list cost, last decimal", lambda: write(priced(
        lambda r: dict(r, ListCost=str(fc.D(r["ListCost"]) +
                                       fc.D("0.000000001"))))),
     "ListCost = ListUnitPrice x PricingQuantity"),
    ("contracted cost, last decimal", lambda: write(priced(
        lambda r: dict(r, ContractedCost=str(fc.D(r["ContractedCost"]) -
                                             fc.D("0.000000001"))))),
     "ContractedCost = ContractedUnitPrice x PricingQuantity"),
    ("negative price", lambda: write(first(ListUnitPrice="-1")),
     "ListUnitPrice is non-negative"),
    ("null price", lambda: write(first(ContractedUnitPrice="")),
     "ContractedUnitPrice MUST NOT be null for usage"),
    ("null quantity", lambda: write(first(ConsumedQuantity="")),
     "ConsumedQuantity MUST NOT be null for usage"),
    ("unit without quantity", lambda: write(first(PricingQuantity="")),
     "PricingUnit is null iff PricingQuantity is"),
    ("sub account name", lambda: write(first(SubAccountName="")),
     "SubAccountName is set when SubAccountId is"),
    ("resource type", lambda: write(first(ResourceType="")),
     "ResourceType is set when ResourceId is"),
    ("resource name = id", lambda: write(first(
        ResourceName=rows[0]["ResourceId"])),
     "ResourceName does not duplicate ResourceId"),
    ("nested tag", lambda: write(first(Tags='{"gpuledger/a": {"b": 1}}')),
     "Tags values are not objects or arrays"),
    ("tags not JSON", lambda: write(first(Tags="team=ops")),
     "Tags is serialized JSON"),
    ("duplicate tag key", lambda: write(first(
        Tags='{"gpuledger/a": "1", "gpuledger/a": "2"}')),
     "Tags keys are unique"),
    ("unprefixed tag", lambda: write(first(Tags='{"team": "ops"}')),
     "provider-defined tag keys carry"),
    ("sku detail key", lambda: write(first(SkuPriceDetails='{"Gpu": 1}')),
     "SkuPriceDetails keys begin with x_"),
    ("sku detail type", lambda: write(first(
        SkuPriceDetails='{"GpuCount": "one"}')),
     "FOCUS-defined SkuPriceDetails properties have their type"),
    ("two parents", lambda: write(first(SkuId="gpuclass/other")),
     "SkuPriceId has one and only one parent SkuId"),
    ("service, two categories", lambda: write(first(
        ServiceCategory="Storage", ServiceSubcategory="Other (Storage)")),
     "ServiceName has one and only one ServiceCategory"),
    ("charge outside billing period", lambda: write(first(
        ChargePeriodEnd="2026-04-02T00:00:00Z")),
     "the charge period lies in its billing period"),
    ("empty charge period", lambda: write(first(
        ChargePeriodEnd=rows[0]["ChargePeriodStart"])),
     "ChargePeriodStart is before ChargePeriodEnd"),
    ("not a month", lambda: write([dict(r,
        BillingPeriodStart="2026-03-01T00:00:00Z",
        BillingPeriodEnd="2026-03-02T00:00:00Z") for r in rows]),
     "billing periods are calendar months"),
    ("unit format time", lambda: write(first(PricingUnit="GPU-Fortnights")),
     "PricingUnit time units"),
    ("price not the rate", lambda: write(first(
        ListUnitPrice="0.750000001")),
     "ListUnitPrice is exact from the rates"),
    ("cost rounded wrong", lambda: write(first(
        BilledCost=str(fc.D(rows[0]["BilledCost"]) + fc.D("0.000000001")))),
     "BilledCost is exact from the rates"),
]
failed = 0
for name, make, rule in cases:
    path = make()
    rep, _ = fc.check(path, feats, lacks, "gpuledger/", sys.argv[3], "USD",
                      0)
    hit = [m for m in rep.must if rule in m]
    print("%s: %s" % ("ok" if hit else "MISSED", name))
    failed += not hit
print("bites: %d of %d" % (len(cases) - failed, len(cases)))
PY
n=$(grep -c '^ok: ' "$tmp/bites")
if grep -q '^bites: \([0-9]*\) of \1$' "$tmp/bites" && [ "$n" -ge 30 ]; then
	ok
else
	bad "the checker misses: $(grep -v '^ok' "$tmp/bites" | head -c 800)"
fi

# --- a simulated month ---------------------------------------------------
run "$bin" simulate --seed 12 --events 3000 --tenants 8 \
	--start 2026-01-01T00:00:00Z --end 2026-02-01T00:00:00Z \
	--out "$tmp/month.ndjson"
expect "simulate" 0
run "$bin" watch --from "$tmp/month.ndjson" --db "$db"
expect "watch" 0
# A rate for every class (h100 with a negotiated price), and a billing
# file that also names the account, a region and a +02:00 offset.
"$bin" replay --db "$db" --json | jq '{rates: [.classes[] | {class: .name,
	currency: "EUR", listUnitPrice: "2.75", billedUnitPrice:
	(if .name == "h100" then "2.125" else "2.75" end)}]}' >"$tmp/rates.json"
jq '. + {billingAccountId: "acme-gpu-1", billingAccountName: "Acme, GPUs",
	providerName: "Acme Cloud", regionId: "eu-west",
	regionName: "EU West", billingPeriodOffset: "+02:00"}' \
	"$tmp/rates.json" >"$tmp/billing.json"
n=$(jq '.rates | length' "$tmp/rates.json")
if [ "$n" -ge 2 ]; then ok; else bad "rates for $n classes"; fi

run "$bin" export --focus-version 1.2 --db "$db" --month 2026-01 --step hour
expect "hourly" 0
cp "$tmp/out" "$tmp/hour.csv"
conforms "hourly, no rates" "$tmp/hour.csv" --offset Z
run "$bin" export --focus-version 1.2 --db "$db" --month 2026-01 --step day
expect "daily" 0
cp "$tmp/out" "$tmp/day.csv"
conforms "daily, no rates" "$tmp/day.csv" --offset Z
run "$bin" export --focus-version 1.2 --db "$db" --month 2026-01 --step day --rates \
	"$tmp/rates.json" --rollup subtree
expect "daily, rates, rollup" 0
cp "$tmp/out" "$tmp/rollup.csv"
conforms "daily, rates, rollup" "$tmp/rollup.csv" --rates "$tmp/rates.json" \
	--currency EUR --offset Z
has "rollup has subtree rows" "$tmp/rollup.csv" ',subtree$'
run "$bin" export --focus-version 1.2 --db "$db" --month 2026-01 --step hour --basis allocated \
	--rates "$tmp/billing.json"
expect "hourly, allocated, billing file" 0
cp "$tmp/out" "$tmp/conf.csv"
conforms "hourly, allocated, billing file" "$tmp/conf.csv" \
	--features "$feats,regions" --rates "$tmp/billing.json" --offset +02:00
has "configured names" "$tmp/conf.csv" ',acme-gpu-1,"Acme, GPUs",EUR,'
has "region" "$tmp/conf.csv" ',Acme Cloud,Acme Cloud,eu-west,EU West,'
# The month at +02:00 starts at 22:00Z the day before.
has "local month" "$tmp/conf.csv" ',2026-01-31T22:00:00Z,2025-12-31T22:00:00Z,'
run "$bin" export --focus-version 1.2 --db "$db" --month 2026-01 --format json --rates \
	"$tmp/rates.json" --rollup subtree
expect "ndjson" 0
cp "$tmp/out" "$tmp/rows.ndjson"
conforms "ndjson" "$tmp/rows.ndjson" --rates "$tmp/rates.json" --offset Z

# FOCUS's product rule on every priced row, hourly and daily: ListCost =
# ListUnitPrice x PricingQuantity and ContractedCost = ContractedUnitPrice
# x PricingQuantity, exactly, once rounded half up to the written 9
# decimals. Prices with 9 decimals make every truncation of the quantity
# show in the cost; the checker must have looked at two products (list and
# contracted) of every row.
"$bin" replay --db "$db" --json | jq '{rates: [.classes[] | {class: .name,
	currency: "USD", listUnitPrice: "3.141592653", billedUnitPrice:
	"2.500000000"}]}' >"$tmp/pi.json"
for step in hour day; do
	run "$bin" export --focus-version 1.2 --db "$db" --month 2026-01 --step $step --rates \
		"$tmp/pi.json"
	expect "priced $step" 0
	cp "$tmp/out" "$tmp/pi-$step.csv"
	conforms "price x quantity, $step" "$tmp/pi-$step.csv" --rates \
		"$tmp/pi.json" --offset Z
	n=$(python3 -c 'import csv, sys
print(2 * sum(1 for r in csv.DictReader(open(sys.argv[1]))
              if float(r["PricingQuantity"]) > 0))' "$tmp/pi-$step.csv")
	got=$(sed -n 's/.* \([0-9]*\) priced cost products$/\1/p' "$tmp/check")
	if [ "$n" -gt 100 ] && [ "$got" = "$n" ]; then ok; else
		bad "price x quantity, $step: $got products checked, want $n"
	fi
done

# The month is closed (the horizon is past its end) only at +02:00.
python3 - "$tmp/day.csv" "$tmp/conf.csv" >"$tmp/py" 2>&1 <<'PY'
import csv, sys
utc = {r["x_BillingPeriodStatus"] for r in csv.DictReader(open(sys.argv[1]))}
local = {r["x_BillingPeriodStatus"] for r in csv.DictReader(open(sys.argv[2]))}
print(sorted(utc), sorted(local))
PY
has "open and closed periods" "$tmp/py" "^\['open'\] \['closed'\]$"

# --- exactness ------------------------------------------------------------
# device-ms per (namespace, class): the month = the sum of its days = the
# sum of its hours, and no charge period crosses a day.
run "$bin" export --focus-version 1.2 --db "$db" --month 2026-01 --step day --format json
cp "$tmp/out" "$tmp/day.ndjson"
python3 - "$tmp/hour.csv" "$tmp/day.csv" "$tmp/day.ndjson" >"$tmp/py" \
	2>&1 <<'PY'
import csv, collections, json, sys
def sums(rows):
    s = collections.Counter()
    for r in rows:
        s[(r["SubAccountId"], r["x_DeviceClass"])] += int(
            r["x_DeviceMilliseconds"])
    return s
hours = list(csv.DictReader(open(sys.argv[1])))
days = list(csv.DictReader(open(sys.argv[2])))
js = [json.loads(l) for l in open(sys.argv[3])]
h, d, j = sums(hours), sums(days), sums(js)
assert h == d == j and len(h) > 3, (len(h), len(d))
for r in hours:
    assert r["ChargePeriodStart"][:10] == r["ChargePeriodEnd"][:10] or \
        r["ChargePeriodEnd"][11:] == "00:00:00Z", r
per_day = collections.Counter()
for r in hours:
    per_day[(r["SubAccountId"], r["x_DeviceClass"],
             r["ChargePeriodStart"][:10])] += int(r["x_DeviceMilliseconds"])
for r in days:
    k = (r["SubAccountId"], r["x_DeviceClass"], r["ChargePeriodStart"][:10])
    assert per_day[k] == int(r["x_DeviceMilliseconds"]), k
print("exact", sum(h.values()), len(hours), len(days))
PY
has "month = days = hours" "$tmp/py" '^exact [0-9]+ [0-9]+ [0-9]+$'

# --- FOCUS 1.2, byte for byte ------------------------------------------------
# What 79122f9 (the last build without 1.3) wrote for the same inputs.
pinned() { # NAME FILE SHA256
	got=$(sha256sum <"$2" | cut -d' ' -f1)
	if [ "$got" = "$3" ]; then ok; else bad "$1: the 1.2 bytes changed ($got)"; fi
}
pinned "1.2, small, daily, priced" "$tmp/one.csv" \
	ee7afbfccbf3d650cb0cebe77c0e1fa6ec451018e460817dc0f930e065c9007c
pinned "1.2, month, hourly" "$tmp/hour.csv" \
	c87d323cb46f91ef13ee211698b4f139686c531af3ca4258a8f1f7ff7fcecb01
pinned "1.2, month, daily ndjson" "$tmp/day.ndjson" \
	0aefa25687d8b7aa2126f2c40b93d828b1dbb8e0cac2ac63d48fbcadfe092910

# --- FOCUS 1.3, the default -------------------------------------------------
feats13=$feats,split-cost-allocation
run "$bin" export --db "$db" --month 2026-01 --step hour
expect "1.3 hourly" 0
cp "$tmp/out" "$tmp/h13.csv"
conforms "1.3 hourly, no rates" "$tmp/h13.csv" --version 1.3 \
	--features "$feats13" --offset Z
has "1.3 has ServiceProviderName" "$tmp/h13.csv" '^Allocated.*,HostProviderName,.*,ServiceProviderName,'
run "$bin" export --focus-version 1.3 --db "$db" --month 2026-01 --step hour
same "1.3 is the default" "$tmp/h13.csv" "$tmp/out"
run "$bin" export --db "$db" --month 2026-01 --step day --rates \
	"$tmp/rates.json" --rollup subtree
expect "1.3 daily, rates, rollup" 0
cp "$tmp/out" "$tmp/r13.csv"
conforms "1.3 daily, rates, rollup" "$tmp/r13.csv" --version 1.3 \
	--features "$feats13" --rates "$tmp/rates.json" --currency EUR --offset Z
run "$bin" export --db "$db" --month 2026-01 --step hour --basis allocated \
	--rates "$tmp/billing.json"
conforms "1.3 hourly, allocated, billing file" "$tmp/out" --version 1.3 \
	--features "$feats13,regions" --rates "$tmp/billing.json" --offset +02:00
run "$bin" export --db "$db" --month 2026-01 --format json --rates \
	"$tmp/rates.json" --rollup subtree
cp "$tmp/out" "$tmp/r13.ndjson"
conforms "1.3 ndjson" "$tmp/r13.ndjson" --version 1.3 --features "$feats13" \
	--rates "$tmp/rates.json" --offset Z
# Usage is the same in both versions; only the columns differ.
python3 - "$tmp/hour.csv" "$tmp/h13.csv" >"$tmp/py" 2>&1 <<'PY'
import csv, sys
a = list(csv.DictReader(open(sys.argv[1])))
b = list(csv.DictReader(open(sys.argv[2])))
key = ("ChargePeriodStart", "x_TenantPath", "x_DeviceClass",
       "x_DeviceMilliseconds", "BilledCost")
assert [tuple(r[k] for k in key) for r in a] == \
    [tuple(r[k] for k in key) for r in b]
assert all(r["AllocatedMethodId"] == "gpuledger/device-ms-proportional"
           and r["SubAccountId"] == "" for r in b)
print("same usage", len(a))
PY
has "1.2 and 1.3 bill the same usage" "$tmp/py" '^same usage [0-9]+$'
run "$bin" export --db "$db" --month 2026-01 --focus-version 1.4
expect "--focus-version 1.4" 2
has "a bad version says which" "$tmp/err" 'focus-version "1.4": expected 1.2 or 1.3'

# The checker's 1.3 rules bite: one mutation of the daily export each.
python3 - "$check" "$tmp/r13.csv" "$tmp/rates.json" >"$tmp/bites" 2>&1 <<'PY'
import csv, importlib.util, io, json, sys
spec = importlib.util.spec_from_file_location("fc", sys.argv[1])
fc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fc)
rows = list(csv.DictReader(open(sys.argv[2])))
feats = set("usage,resources,resource-types,skus,unit-prices,"
            "negotiated-prices,pricing-categories,sub-accounts,"
            "sub-account-types,tags,split-cost-allocation".split(","))
lacks = {"commitment-discounts", "capacity-reservations"}
# A namespace row whose pool (period, class) has other rows.
pools = {}
for i, r in enumerate(rows):
    if r["AllocatedMethodId"]:
        pools.setdefault((r["ChargePeriodStart"], r["x_DeviceClass"]),
                         []).append(i)
at = next(v[0] for v in pools.values() if len(v) > 1)

def write(rs, cols=None):
    cols = cols or list(rs[0])
    f = io.StringIO()
    w = csv.DictWriter(f, cols, lineterminator="\n")
    w.writeheader()
    for r in rs:
        w.writerow({k: r.get(k, "") for k in cols})
    open(sys.argv[2] + ".m", "w").write(f.getvalue())
    return sys.argv[2] + ".m"

def one(**kw):
    rs = [dict(r) for r in rows]
    rs[at].update(kw)
    return write(rs)

def details(f):
    d = json.loads(rows[at]["AllocatedMethodDetails"])
    f(d)
    return one(AllocatedMethodDetails=json.dumps(d))

def drop(c):
    return write(rows, [k for k in rows[0] if k != c])

def ratio(d):
    d["Elements"][0]["AllocatedRatio"] = 0.5

cases = [
    ("drop ServiceProviderName", lambda: drop("ServiceProviderName"),
     "ServiceProviderName MUST be present"),
    ("drop HostProviderName", lambda: drop("HostProviderName"),
     "HostProviderName MUST be present"),
    ("null HostProviderName", lambda: one(HostProviderName=""),
     "HostProviderName MUST NOT be null"),
    ("drop ProviderName (deprecated, still Mandatory)",
     lambda: drop("ProviderName"), "ProviderName MUST be present"),
    ("drop AllocatedMethodId", lambda: drop("AllocatedMethodId"),
     "AllocatedMethodId MUST be present"),
    ("drop AllocatedTags", lambda: drop("AllocatedTags"),
     "AllocatedTags MUST be present"),
    ("no method, a resource", lambda: one(AllocatedMethodId=""),
     "AllocatedResourceId is null when the charge is not"),
    ("method, no resource", lambda: one(AllocatedResourceId=""),
     "AllocatedResourceId is set on an allocated charge"),
    ("resource, no name", lambda: one(AllocatedResourceName=""),
     "AllocatedResourceName is null iff"),
    ("details not an object", lambda: one(AllocatedMethodDetails="[1]"),
     "JsonObjectFormat"),
    ("no Elements", lambda: one(AllocatedMethodDetails='{"x_A": 1}'),
     "top-level Elements"),
    ("no ratio", lambda: details(lambda d: d["Elements"][0].pop(
        "AllocatedRatio")), "has an AllocatedRatio"),
    ("quantity without unit", lambda: details(lambda d: d["Elements"][0].pop(
        "UsageUnit")), "UsageUnit is present when UsageQuantity is"),
    ("ratio as text", lambda: details(lambda d: d["Elements"][0].update(
        AllocatedRatio="0.5")), "allocation properties have their type"),
    ("unprefixed property", lambda: details(lambda d: d["Elements"][0].update(
        Pool=1)), "begin with x_ unless FOCUS-defined"),
    ("ratios off by 1e-12", lambda: details(lambda d: d["Elements"][0].update(
        AllocatedRatio=float(d["Elements"][0]["AllocatedRatio"]) + 1e-12)),
     "sum to 1"),
    ("ratio changed", lambda: details(ratio), "sum to 1"),
    # A dimension that differs from its siblings' (here a sub-account, which
    # the pool has none of) is no longer the same origin charge's.
    ("dimension not the origin's", lambda: one(SubAccountId="tenant-x",
                                               SubAccountName="tenant-x",
                                               SubAccountType="Tenant"),
     "sum to 1"),
    ("price not the origin's", lambda: one(ContractedUnitPrice="9.000000000"),
     "have its unit prices"),
    ("allocated tag repeats a tag", lambda: one(AllocatedTags=json.dumps(
        dict(json.loads(rows[at]["AllocatedTags"]),
             **json.loads(rows[at]["Tags"])))),
     "AllocatedTags does not repeat a tag of Tags"),
    ("unprefixed allocated tag", lambda: one(AllocatedTags='{"team": "a"}'),
     "provider-defined tag keys carry"),
]
failed = 0
for name, make, rule in cases:
    path = make()
    rep, _ = fc.check(path, feats, lacks, "gpuledger/", None, None, 0, "1.3")
    hit = [m for m in rep.must if rule in m]
    print("%s: %s" % ("ok" if hit else "MISSED", name))
    failed += not hit
rep, _ = fc.check(sys.argv[2], feats, lacks, "gpuledger/", None, None, 0,
                  "1.3")
print("unmutated: %d MUST" % rep.count("MUST"))
print("bites: %d of %d" % (len(cases) - failed, len(cases)))
PY
if grep -q '^bites: \([0-9]*\) of \1$' "$tmp/bites" &&
	grep -q '^unmutated: 0 MUST$' "$tmp/bites"; then
	ok
else
	bad "the 1.3 checker misses: $(grep -v '^ok' "$tmp/bites" | head -c 800)"
fi

# Exports of a growing ledger, each up to its horizon (cut at the second)
# and starting where the last one stopped, add up to the whole.
: >"$tmp/grow.ndjson"
from=2026-01-01T00:00:00Z
rm -f "$tmp/pieces.csv"
for upto in 700 1400 2100 3000; do
	sed -n "$(($(wc -l <"$tmp/grow.ndjson") + 1)),${upto}p" \
		"$tmp/month.ndjson" >>"$tmp/grow.ndjson"
	run "$bin" watch --from "$tmp/grow.ndjson" --db "$tmp/gdb"
	expect "grow to $upto" 0
	run "$bin" export --focus-version 1.2 --db "$tmp/gdb" --from "$from" --step hour
	expect "piece from $from" 0
	if [ -f "$tmp/pieces.csv" ]; then
		tail -n +2 "$tmp/out" >>"$tmp/pieces.csv"
	else
		cp "$tmp/out" "$tmp/pieces.csv"
	fi
	conforms "piece from $from" "$tmp/out" --offset Z
	last=$("$bin" stats --db "$tmp/gdb" | sed -n 's/^lastTime: //p')
	cut=$(python3 -c 'import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(max(r["ChargePeriodEnd"] for r in rows))' "$tmp/out")
	# The cut is the horizon floored to the second.
	if [ "$cut" = "$(echo "$last" | cut -c1-19)Z" ]; then ok; else
		bad "cut $cut, horizon $last"
	fi
	from=$cut
done
python3 - "$tmp/pieces.csv" "$tmp/hour.csv" >"$tmp/py" 2>&1 <<'PY'
import csv, collections, sys
def sums(p):
    s = collections.Counter()
    for r in csv.DictReader(open(p)):
        s[(r["SubAccountId"], r["x_DeviceClass"])] += int(
            r["x_DeviceMilliseconds"])
    return s
a, b = sums(sys.argv[1]), sums(sys.argv[2])
assert a == b, set(a.items()) ^ set(b.items())
print("pieces = whole", sum(a.values()))
PY
has "pieces cut at the horizon = the whole" "$tmp/py" '^pieces = whole'

# --- over HTTP ------------------------------------------------------------
# The tenant with the most descendants exports its subtree only.
tenant=$("$bin" replay --db "$db" --json | jq -r '[.tenants[] |
	select(.parent != null and .parent != "tenant-root") | .parent] |
	group_by(.) | max_by(length) | .[0]')
printf 'admin-token-0123456789 admin\ntenant-token-0123456789 tenant:%s\n' \
	"$tenant" >"$tmp/tokens"
chmod 600 "$tmp/tokens"
cp "$tmp/rates.json" "$tmp/live.json"
"$bin" serve --db "$db" --listen 127.0.0.1:0 --token-file "$tmp/tokens" \
	--rates "$tmp/live.json" --poll-ms 20 >"$tmp/serve.out" \
	2>"$tmp/serve.err" &
server_pid=$!
wait_listening "$tmp/serve.out"
[ -n "$port" ] || bad "serve did not start: $(cat "$tmp/serve.err")"
fv=1.2 # the version get asks for (empty: the default)
get() { # TOKEN QUERY OUT: the HTTP status to $code
	code=$(curl -s -o "$3" -w '%{http_code}' \
		-H "Authorization: Bearer $1" \
		"http://127.0.0.1:$port/v1/export?$2${fv:+&focusVersion=$fv}")
}
get admin-token-0123456789 'month=2026-01&step=day&rollup=subtree' \
	"$tmp/http.csv"
if [ "$code" = 200 ]; then ok; else bad "admin export: $code"; fi
conforms "HTTP, priced by --rates" "$tmp/http.csv" --rates "$tmp/rates.json" \
	--offset Z
same "HTTP = CLI" "$tmp/rollup.csv" "$tmp/http.csv"
fv= get admin-token-0123456789 'month=2026-01&step=day&rollup=subtree' \
	"$tmp/http13.csv"
same "HTTP = CLI, 1.3 by default" "$tmp/r13.csv" "$tmp/http13.csv"
fv=1.4 get admin-token-0123456789 'month=2026-01' "$tmp/body"
if [ "$code" = 400 ]; then ok; else bad "focusVersion=1.4: $code, want 400"; fi
if jq -e '.error | test("focusVersion \"1.4\": expected 1.2 or 1.3")' \
	"$tmp/body" >/dev/null; then ok; else bad "focusVersion=1.4: $(cat "$tmp/body")"; fi
fv=1.2 # a prefix assignment to a function may outlive the call in sh
get tenant-token-0123456789 'month=2026-01&step=day&rollup=subtree' \
	"$tmp/tenant.csv"
if [ "$code" = 200 ]; then ok; else bad "tenant export: $code"; fi
conforms "HTTP, tenant" "$tmp/tenant.csv" --rates "$tmp/rates.json"
# subtree_rows WHAT MINE NS [MANY]: MINE holds exactly the rows of the
# admin's $tmp/http.csv whose namespace lies in NS's subtree, some but not
# all of them (MANY: of more than one namespace).
subtree_rows() {
	python3 - "$2" "$tmp/http.csv" "$3" "${4:-}" >"$tmp/py" 2>&1 <<'PY'
import csv, sys
mine = list(csv.DictReader(open(sys.argv[1])))
every = list(csv.DictReader(open(sys.argv[2])))
t = sys.argv[3]
def inside(ns):
    return ns == t or ns.startswith(t + "-")
want = [r for r in every if inside(r["SubAccountId"])]
assert all(inside(r["SubAccountId"]) for r in mine)
assert mine == want, (len(mine), len(want))
assert 0 < len(mine) < len(every)
assert not sys.argv[4] or len({r["SubAccountId"] for r in mine}) > 1
print("subtree", len(mine), len(every))
PY
	has "$1" "$tmp/py" '^subtree [0-9]+ [0-9]+$'
}
subtree_rows "tenant sees its subtree, all of it" "$tmp/tenant.csv" "$tenant" many
# tenant=NS: the rows of NS's subtree only, as a tenant token's own; for a
# tenant token NS must lie in its subtree (403 otherwise).
get admin-token-0123456789 "month=2026-01&step=day&rollup=subtree&tenant=$tenant" \
	"$tmp/only.csv"
if [ "$code" = 200 ]; then ok; else bad "admin export tenant=: $code"; fi
same "admin tenant=$tenant = the tenant token's export" "$tmp/tenant.csv" \
	"$tmp/only.csv"
set -- $("$bin" replay --db "$db" --json | jq -r --arg t "$tenant" '
	([.tenants[] | select(.parent == $t) | .namespace] | sort | .[0]),
	([.tenants[] | select(.parent == "tenant-root" and .namespace != $t) |
	  .namespace] | sort | .[0])')
child=$1 other=$2
for who in admin tenant; do
	get $who-token-0123456789 "month=2026-01&step=day&rollup=subtree&tenant=$child" \
		"$tmp/child-$who.csv"
	if [ "$code" = 200 ]; then ok; else bad "$who export tenant=$child: $code"; fi
done
same "tenant=$child: admin = tenant token" "$tmp/child-admin.csv" \
	"$tmp/child-tenant.csv"
subtree_rows "tenant=$child is its subtree, all of it" "$tmp/child-admin.csv" "$child"
get admin-token-0123456789 "month=2026-01&format=json&tenant=$child" \
	"$tmp/child.ndjson"
conforms "HTTP, tenant=, ndjson" "$tmp/child.ndjson"
get tenant-token-0123456789 "month=2026-01&tenant=$other" "$tmp/body"
if [ "$code" = 403 ]; then ok; else bad "tenant token, tenant=$other (outside its subtree): $code"; fi
has "the 403 says why" "$tmp/body" 'outside the subtree'
get tenant-token-0123456789 "month=2026-01&tenant=tenant-root" "$tmp/body"
if [ "$code" = 403 ]; then ok; else bad "tenant token, tenant=tenant-root: $code"; fi
for ns in default tenant-Bad ''; do
	get admin-token-0123456789 "month=2026-01&tenant=$ns" "$tmp/body"
	if [ "$code" = 400 ]; then ok; else bad "tenant=$ns: $code, want 400"; fi
done
get tenant-token-0123456789 'month=2026-01&format=json' "$tmp/tenant.ndjson"
conforms "HTTP, tenant, ndjson" "$tmp/tenant.ndjson"
get tenant-token-0123456789 'month=2026-1' "$tmp/body"
if [ "$code" = 400 ]; then ok; else bad "bad month: $code"; fi
get tenant-token-0123456789 'month=2026-01&from=2026-01-01T00:00:00Z' \
	"$tmp/body"
if [ "$code" = 400 ]; then ok; else bad "month and from: $code"; fi
code=$(curl -s -o /dev/null -w '%{http_code}' \
	"http://127.0.0.1:$port/v1/export?month=2026-01")
if [ "$code" = 401 ]; then ok; else bad "no token: $code"; fi

# A new price takes force without a restart; a broken file keeps it.
jq '(.rates[].listUnitPrice) = "9" | (.rates[].billedUnitPrice) = "8"' \
	"$tmp/rates.json" >"$tmp/live.new"
mv "$tmp/live.new" "$tmp/live.json"
i=0
until grep -q 'reloaded' "$tmp/serve.err" || [ $i -ge 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
get admin-token-0123456789 'month=2026-01&step=day' "$tmp/repriced.csv"
conforms "HTTP, repriced" "$tmp/repriced.csv" --rates "$tmp/live.json"
echo '{"rates": [' >"$tmp/live.json"
i=0
until grep -q 'previous rates stay' "$tmp/serve.err" || [ $i -ge 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
has "a broken billing file is reported" "$tmp/serve.err" 'previous rates stay in force'
get admin-token-0123456789 'month=2026-01&step=day' "$tmp/kept.csv"
same "a broken billing file keeps the last prices" "$tmp/repriced.csv" \
	"$tmp/kept.csv"
kill "$server_pid"
wait "$server_pid" 2>/dev/null
server_pid=
# A bad billing file at start is an error.
echo '{"rates": {}}' >"$tmp/bad.json"
run "$bin" serve --db "$db" --listen 127.0.0.1:0 --rates "$tmp/bad.json"
expect "serve with a bad billing file" 2
has "serve names the file" "$tmp/err" 'rates .*bad.json'

echo "focus_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
