#!/usr/bin/env python3
"""What DuckDB read (tests/duckdb/load.mjs's report) against the CSV itself,
read here independently with Python's csv and decimal modules, for
tests/duckdb_cli.sh.

  check.py compare VERSION FILE REPORT
      the row count, the exact sums of the cost and quantity columns and of
      x_DeviceMilliseconds, every decimal value as DuckDB reads it back (a
      value with more decimals than the type keeps would be rounded, not
      refused), and for 1.3 each pool's AllocatedRatio sum (exactly 1) and
      device-ms (its x_PoolDeviceMilliseconds). Prints each problem; exit 1
      when there is one.
  check.py break CASE FILE OUT
      writes FILE with one thing broken as CASE says (see CASES), every
      other byte as it was.
"""
import csv
import io
import json
import re
import sys
from decimal import Decimal

# The columns load.mjs sums: costs, quantities and the exact usage.
SUMMED = ["BilledCost", "ContractedCost", "EffectiveCost", "ListCost",
          "ConsumedQuantity", "PricingQuantity", "x_DeviceMilliseconds"]


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def compare(version, path, report_path):
    rows = read(path)
    with open(report_path, encoding="utf-8") as f:
        rep = json.load(f)
    problems = []
    if not rep.get("loaded") or rep.get("error"):
        return ["DuckDB did not load and read it: %s" % rep.get("error")]
    if not rows:
        problems.append("the CSV has no rows")
    if rep["rows"] != len(rows):
        problems.append("DuckDB has %d rows, the CSV %d" %
                        (rep["rows"], len(rows)))
    for c in SUMMED:
        want = sum((Decimal(r[c]) for r in rows), Decimal(0))
        got = rep["sums"].get(c)
        if got is None or Decimal(got) != want:
            problems.append("SUM(%s): DuckDB %s, the CSV %s" % (c, got, want))
        elif want <= 0:
            problems.append("SUM(%s) is %s: nothing was billed" % (c, want))
    for c, vals in sorted(rep["values"].items()):
        for i, (r, v) in enumerate(zip(rows, vals)):
            if (v if v is not None else "") != r[c]:
                problems.append("%s of row %d: DuckDB reads %s, the CSV has "
                                "%s" % (c, i + 1, v, r[c]))
                break
    if version == "1.3":
        problems += pools(rows, rep["pools"])
    return problems


def pools(rows, got):
    """Each origin charge (a class's pool over one charge period): its
    allocated charges' ratios sum to exactly 1 and their device-ms to the
    pool's."""
    problems = []
    want = {}
    for r in rows:
        if r["AllocatedMethodId"]:
            k = (r["ResourceId"], r["ChargePeriodStart"])
            want[k] = want.get(k, 0) + 1
    if not got or len(got) != len(want):
        problems.append("DuckDB finds %d pools, the CSV has %d" %
                        (len(got), len(want)))
    if not any(n > 1 for n in want.values()):
        problems.append("no pool is split among namespaces")
    for p in got:
        name = "pool %s at %s" % (p["pool"], p["start"])
        if Decimal(p["ratio_sum"]) != 1:
            problems.append("%s: the AllocatedRatios of its %d rows sum to "
                            "%s" % (name, p["n"], p["ratio_sum"]))
        if not p["ms_sum"] == p["pool_ms_min"] == p["pool_ms_max"]:
            problems.append("%s: device-ms %s, x_PoolDeviceMilliseconds %s"
                            " to %s" % (name, p["ms_sum"], p["pool_ms_min"],
                                        p["pool_ms_max"]))
    return problems


def ratio_off(v):
    """The first AllocatedRatio of an AllocatedMethodDetails 1e-12 more (less
    when it is 1, so that it still fits 12 decimals)."""
    m = re.search(r'"AllocatedRatio":([0-9.]+)', v)
    r = Decimal(m.group(1))
    r += Decimal("1e-12") if r < 1 else Decimal("-1e-12")
    return "%s%s%s" % (v[:m.start(1)], r, v[m.end(1):])


# CASE: (column, what its value becomes in the first row that has one);
# "drop:COLUMN" drops a column, "same" changes nothing.
CASES = {
    "same": (None, None),
    "time-without-z": ("ChargePeriodStart", lambda v: v.rstrip("Z")),
    "time-with-offset": ("BillingPeriodEnd",
                         lambda v: v.rstrip("Z") + "+00:00"),
    "time-fraction": ("ChargePeriodEnd", lambda v: v.rstrip("Z") + ".5Z"),
    "cost-decimal-comma": ("BilledCost", lambda v: "1,5"),
    "quantity-with-unit": ("PricingQuantity", lambda v: v + " GPU-Hours"),
    "price-placeholder": ("ListUnitPrice", lambda v: "N/A"),
    "ms-fraction": ("x_DeviceMilliseconds", lambda v: v + ".5"),
    "tags-not-json": ("Tags", lambda v: v.replace('"', "", 2)),
    "details-not-json": ("AllocatedMethodDetails", lambda v: v[:-1]),
    "cost-ten-decimals": ("ListCost", lambda v: v + "4"),
    "ratio-off": ("AllocatedMethodDetails", ratio_off),
    "drop:SkuId": (None, None),
}


def breaks(case, path, out):
    with open(path, newline="", encoding="utf-8") as f:
        rdr = csv.reader(f)
        head = next(rdr)
        rows = [dict(zip(head, r)) for r in rdr]
    col, change = CASES[case]
    if case.startswith("drop:"):
        head = [c for c in head if c != case[5:]]
    elif col is not None:
        r = next(r for r in rows if r[col])
        r[col] = change(r[col])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    for r in rows:
        w.writerow([r[c] for c in head])
    with open(out, "w", encoding="utf-8", newline="") as f:
        f.write(buf.getvalue())


def main(argv):
    if len(argv) == 4 and argv[0] == "compare":
        problems = compare(*argv[1:])
        for p in problems:
            print(p)
        return 1 if problems else 0
    if len(argv) == 4 and argv[0] == "break" and argv[1] in CASES:
        breaks(*argv[1:])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
