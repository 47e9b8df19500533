#!/usr/bin/env python3
"""An independent FOCUS 1.2 / 1.3 conformance checker (python3 stdlib only).

Written from the specification text (FinOps Open Cost and Usage Spec, tag
v1.2: specification/columns/*.md and specification/attributes/*.md), not
from gpuledger's code: every rule below quotes or paraphrases one
requirement and says whether it is a MUST or a SHOULD. Only the columns and
rules a dataset can be checked against are encoded; requirements about the
world outside the file (an invoice's total, a published price list) are
checked where the caller supplies that world (--rates).

FOCUS 1.3 (--version 1.3; its text, specification/datasets/cost_and_usage/
columns/*.md and attributes/*split_cost_allocation_handling.md) adds the
Mandatory ServiceProviderName and HostProviderName (ProviderName and
PublisherName are deprecated there but still MUST be present), and split
cost allocation (feature split-cost-allocation): AllocatedMethodId,
AllocatedResourceId, AllocatedResourceName, AllocatedTags (Conditional) and
AllocatedMethodDetails (SHOULD be present). See check_allocation.

Usage: focus_check.py FILE.csv|FILE.ndjson [--version 1.2|1.3]
           [--features LIST]
           [--lacks LIST] [--tag-prefix P] [--rates FILE] [--currency C]
           [--offset +HH:MM] [--self-test]

  --features  what the provider supports (Conditional columns become
              required): usage, resources, resource-types, skus,
              unit-prices, negotiated-prices, pricing-categories,
              sub-accounts, sub-account-types, tags, regions,
              split-cost-allocation (1.3)
  --lacks     what it does not support (its Conditional columns must be
              absent: gpuledger's rule of inventing nothing):
              commitment-discounts, capacity-reservations,
              pricing-currency, billing-account-types, availability-zones
  --tag-prefix  every Tags key is provider-defined with this prefix (the
              provider has no user-defined tag scheme)
  --rates     a gpuledger billing file: unit prices must be its prices and
              costs exact from them and x_DeviceMilliseconds
  --offset    billing periods must be calendar months at this UTC offset
Exit status: 0 with no MUST violation, 1 otherwise, 2 on bad usage.
"""

import csv
import datetime
import decimal
import json
import re
import sys

D = decimal.Decimal
decimal.getcontext().prec = 60

# ---------------------------------------------------------------------------
# Column metadata, from each column's "Content constraints" table.

MANDATORY = {
    "BilledCost": ("Decimal", False),
    "BillingAccountId": ("String", False),
    "BillingAccountName": ("String", True),
    "BillingCurrency": ("Currency", False),
    "BillingPeriodEnd": ("DateTime", False),
    "BillingPeriodStart": ("DateTime", False),
    "ChargeCategory": ("String", False),
    "ChargeClass": ("String", True),
    "ChargeDescription": ("String", True),
    "ChargePeriodEnd": ("DateTime", False),
    "ChargePeriodStart": ("DateTime", False),
    "ContractedCost": ("Decimal", False),
    "EffectiveCost": ("Decimal", False),
    "InvoiceIssuerName": ("String", False),
    "ListCost": ("Decimal", False),
    "PricingQuantity": ("Decimal", True),
    "PricingUnit": ("String", True),
    "ProviderName": ("String", False),
    "PublisherName": ("String", False),
    "ServiceCategory": ("String", False),
    "ServiceName": ("String", False),
}

# Conditional columns: (type, nullable, the feature that requires them).
CONDITIONAL = {
    "AvailabilityZone": ("String", True, "availability-zones"),  # Recommended
    "BillingAccountType": ("String", False, "billing-account-types"),
    "CapacityReservationId": ("String", True, "capacity-reservations"),
    "CapacityReservationStatus": ("String", True, "capacity-reservations"),
    "CommitmentDiscountCategory": ("String", True, "commitment-discounts"),
    "CommitmentDiscountId": ("String", True, "commitment-discounts"),
    "CommitmentDiscountName": ("String", True, "commitment-discounts"),
    "CommitmentDiscountQuantity": ("Decimal", True, "commitment-discounts"),
    "CommitmentDiscountStatus": ("String", True, "commitment-discounts"),
    "CommitmentDiscountType": ("String", True, "commitment-discounts"),
    "CommitmentDiscountUnit": ("String", True, "commitment-discounts"),
    "ConsumedQuantity": ("Decimal", True, "usage"),
    "ConsumedUnit": ("String", True, "usage"),
    "ContractedUnitPrice": ("Decimal", True, "negotiated-prices"),
    "ListUnitPrice": ("Decimal", True, "unit-prices"),
    "PricingCategory": ("String", True, "pricing-categories"),
    "PricingCurrency": ("Currency", True, "pricing-currency"),
    "PricingCurrencyContractedUnitPrice": ("Decimal", True, "pricing-currency"),
    "PricingCurrencyEffectiveCost": ("Decimal", True, "pricing-currency"),
    "PricingCurrencyListUnitPrice": ("Decimal", True, "pricing-currency"),
    "RegionId": ("String", True, "regions"),
    "RegionName": ("String", True, "regions"),
    "ResourceId": ("String", True, "resources"),
    "ResourceName": ("String", True, "resources"),
    "ResourceType": ("String", True, "resource-types"),
    "SkuId": ("String", True, "skus"),
    "SkuMeter": ("String", True, "skus"),
    "SkuPriceDetails": ("KeyValue", True, "skus"),
    "SkuPriceId": ("String", True, "skus"),
    "SubAccountId": ("String", True, "sub-accounts"),
    "SubAccountName": ("String", True, "sub-accounts"),
    "SubAccountType": ("String", True, "sub-account-types"),
    "Tags": ("KeyValue", True, "tags"),
}

# FOCUS 1.3's additions (columns' "Content Constraints" and requirements).
MANDATORY_13 = {
    "HostProviderName": ("String", False),     # "MUST NOT be null"
    "ServiceProviderName": ("String", False),
}
CONDITIONAL_13 = {
    "AllocatedMethodId": ("String", True, "split-cost-allocation"),
    "AllocatedResourceId": ("String", True, "split-cost-allocation"),
    "AllocatedResourceName": ("String", True, "split-cost-allocation"),
    "AllocatedTags": ("KeyValue", True, "split-cost-allocation"),
}
# SHOULD be present when the data generator splits costs.
RECOMMENDED_13 = {
    "AllocatedMethodDetails": ("JsonObject", True, "split-cost-allocation"),
}
# Metrics (summed or, for prices, equal across the allocated charges of one
# origin charge); every other FOCUS column but the Allocated* ones is a
# dimension, which MUST match the origin charge's.
METRICS = {"BilledCost", "ConsumedQuantity", "ContractedCost",
           "ContractedUnitPrice", "EffectiveCost", "ListCost",
           "ListUnitPrice", "PricingQuantity", "CommitmentDiscountQuantity",
           "PricingCurrencyContractedUnitPrice",
           "PricingCurrencyEffectiveCost", "PricingCurrencyListUnitPrice"}
ALLOCATED_PROPERTIES = {"AllocatedRatio": "Numeric", "UsageUnit": "String",
                        "UsageQuantity": "Numeric"}

# Recommended columns (their presence is a SHOULD).
RECOMMENDED = {
    "ChargeFrequency": ("String", False),
    "InvoiceId": ("String", True),
    "ServiceSubcategory": ("String", False),
}

ALLOWED = {
    "ChargeCategory": {"Usage", "Purchase", "Tax", "Credit", "Adjustment"},
    "ChargeClass": {"Correction"},
    "ChargeFrequency": {"One-Time", "Recurring", "Usage-Based"},
    "PricingCategory": {"Standard", "Dynamic", "Committed", "Other"},
    "CommitmentDiscountStatus": {"Used", "Unused"},
    "CapacityReservationStatus": {"Used", "Unused"},
    "CommitmentDiscountCategory": {"Spend", "Usage"},
    "ServiceCategory": {
        "AI and Machine Learning", "Analytics", "Business Applications",
        "Compute", "Databases", "Developer Tools", "Multicloud", "Identity",
        "Integration", "Internet of Things", "Management and Governance",
        "Media", "Migration", "Mobile", "Networking", "Security", "Storage",
        "Web", "Other"},
}

# ServiceSubcategory -> its one parent ServiceCategory (servicesubcategory.md).
SUBCATEGORIES = {}
for _cat, _subs in {
    "AI and Machine Learning": ["AI Platforms", "Bots", "Generative AI",
                                "Machine Learning",
                                "Natural Language Processing"],
    "Analytics": ["Analytics Platforms", "Business Intelligence",
                  "Data Processing", "Search", "Streaming Analytics"],
    "Business Applications": ["Productivity and Collaboration"],
    "Compute": ["Containers", "End User Computing", "Quantum Compute",
                "Serverless Compute", "Virtual Machines"],
    "Databases": ["Caching", "Data Warehouses", "Ledger Databases",
                  "NoSQL Databases", "Relational Databases",
                  "Time Series Databases"],
    "Developer Tools": ["Developer Platforms",
                        "Continuous Integration and Deployment",
                        "Development Environments", "Source Code Management",
                        "Quality Assurance"],
    "Identity": ["Identity and Access Management"],
    "Integration": ["API Management", "Messaging", "Workflow Orchestration"],
    "Internet of Things": ["IoT Analytics", "IoT Platforms"],
    "Management and Governance": ["Architecture", "Compliance",
                                  "Cost Management", "Data Governance",
                                  "Disaster Recovery", "Endpoint Management",
                                  "Observability", "Support"],
    "Media": ["Content Creation", "Gaming", "Media Streaming",
              "Mixed Reality"],
    "Migration": ["Data Migration", "Resource Migration"],
    "Mobile": [],
    "Multicloud": ["Multicloud Integration"],
    "Networking": ["Application Networking", "Content Delivery",
                   "Network Connectivity", "Network Infrastructure",
                   "Network Routing", "Network Security"],
    "Security": ["Secret Management", "Security Posture Management",
                 "Threat Detection and Response"],
    "Storage": ["Backup Storage", "Block Storage", "File Storage",
                "Object Storage", "Storage Platforms"],
    "Web": ["Application Platforms"],
    "Other": [],
}.items():
    for _s in _subs + ["Other (%s)" % _cat]:
        SUBCATEGORIES[_s] = _cat

# FOCUS-defined SkuPriceDetails properties and their types.
SKU_PRICE_PROPERTIES = {
    "CoreCount": "Numeric", "DiskMaxIops": "Numeric", "DiskSpace": "Numeric",
    "DiskType": "String", "GpuCount": "Numeric", "InstanceType": "String",
    "InstanceSeries": "String", "MemorySize": "Numeric",
    "NetworkMaxIops": "Numeric", "NetworkMaxThroughput": "Numeric",
    "OperatingSystem": "String", "Redundancy": "String",
    "StorageClass": "String",
}

# ISO 4217 national currencies (CurrencyFormat: "national currency").
ISO4217 = set("""
AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB
BRL BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP
DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF
IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK
LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN
NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF
SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SYP SZL THB TJS TMT TND TOP
TRY TTD TWD TZS UAH UGX USD UYU UZS VES VND VUV WST XAF XCD XOF XPF YER ZAR
ZMW ZWL
""".split())

# Unit Format's recommended time units (a composite's time part MUST be one).
TIME_UNITS = {"Year", "Month", "Day", "Hour", "Minute", "Second"}

NUMERIC = re.compile(r"^-?[0-9]+(\.[0-9]+)?(E-?[0-9]+)?$")
DATETIME = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")
PASCAL = re.compile(r"^[A-Z][a-zA-Z0-9]*$")
PLACEHOLDERS = {"n/a", "na", "not applicable", "null", "none", "-"}


class Report:
    def __init__(self):
        self.must = []
        self.should = []
        self.seen = {}
        self.products = 0  # cost = price x quantity checks on priced rows

    def add(self, level, rule, where, detail=""):
        key = (level, rule)
        self.seen[key] = self.seen.get(key, 0) + 1
        if self.seen[key] > 5:
            return  # enough examples of one rule
        text = "%s %s [%s]%s" % (level, rule, where,
                                 (": " + detail) if detail else "")
        (self.must if level == "MUST" else self.should).append(text)

    def count(self, level):
        return sum(n for (lv, _), n in self.seen.items() if lv == level)


def parse_offset(s):
    if s in (None, "Z"):
        return 0
    m = re.match(r"^([+-])([0-9]{2}):([0-9]{2})$", s)
    if not m:
        raise SystemExit("focus_check: bad --offset %r" % s)
    v = int(m.group(2)) * 3600 + int(m.group(3)) * 60
    return -v if m.group(1) == "-" else v


def parse_time(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc)


# ---------------------------------------------------------------------------
# Reading

def read_rows(path):
    """Rows as dicts of str-or-None (CSV: an empty field is null)."""
    if path.endswith(".ndjson") or path.endswith(".json"):
        rows, cols = [], None
        with open(path) as f:
            for line in f:
                o = json.loads(line)
                if cols is None:
                    cols = list(o)
                rows.append({k: (None if v is None else str(v))
                             for k, v in o.items()})
        return cols or [], rows
    with open(path, newline="") as f:
        r = csv.reader(f, strict=True)
        header = next(r, None)
        if header is None:
            return [], []
        rows = []
        for n, fields in enumerate(r, 2):
            if len(fields) != len(header):
                raise SystemExit("focus_check: line %d: %d fields, header "
                                 "has %d" % (n, len(fields), len(header)))
            rows.append({k: (v if v != "" else None)
                         for k, v in zip(header, fields)})
        return header, rows


# ---------------------------------------------------------------------------
# Dataset-level rules

def check_columns(cols, features, lacks, rep, version="1.2"):
    mandatory, conditional = dict(MANDATORY), dict(CONDITIONAL)
    if version == "1.3":
        mandatory.update(MANDATORY_13)
        conditional.update(CONDITIONAL_13)
        for c, (t, n, feat) in RECOMMENDED_13.items():
            if feat in features and c not in cols:
                rep.add("SHOULD", "%s SHOULD be present when the data "
                        "generator supports %s" % (c, feat), "header")
    known = dict(mandatory)
    for k, (t, n, _) in conditional.items():
        known[k] = (t, n)
    known.update(RECOMMENDED)
    if version == "1.3":
        for k, (t, n, _) in RECOMMENDED_13.items():
            known[k] = (t, n)
    if len(set(cols)) != len(cols):
        rep.add("MUST", "column IDs are unique", "header")
    seen_custom = False
    for c in cols:
        if c.startswith("x_"):
            seen_custom = True
            # Custom columns SHOULD follow the FOCUS naming rules.
            if not PASCAL.match(c[2:]):
                rep.add("SHOULD", "custom column IDs are PascalCase", c)
            continue
        if c not in known:
            rep.add("MUST", "custom columns are prefixed with x_", c)
        elif seen_custom:
            rep.add("SHOULD", "FOCUS columns come before custom ones", c)
        if not PASCAL.match(c):
            rep.add("MUST", "column IDs are alphanumeric Pascal case", c)
    for c in mandatory:
        if c not in cols:
            rep.add("MUST", "%s MUST be present in a FOCUS dataset" % c,
                    "header")
    for c, (_, _, feat) in conditional.items():
        if feat in features and c not in cols:
            if c == "AvailabilityZone":
                rep.add("SHOULD", "AvailabilityZone is RECOMMENDED when "
                        "the provider has zones", "header")
            else:
                rep.add("MUST", "%s MUST be present when the provider "
                        "supports %s" % (c, feat), "header")
        if feat in lacks and c in cols:
            rep.add("MUST", "%s present although the provider lacks %s "
                    "(nothing is invented)" % (c, feat), "header")
    for c in RECOMMENDED:
        if c not in cols:
            rep.add("SHOULD", "%s is RECOMMENDED" % c, "header")
    return known


# ---------------------------------------------------------------------------
# Value formats

def check_value(col, typ, nullable, v, where, rep):
    if v is None:
        if not nullable:
            rep.add("MUST", "%s MUST NOT be null" % col, where)
        return
    if v.strip().lower() in PLACEHOLDERS:
        rep.add("MUST", "no placeholder values for null (NullHandling)",
                where, "%s=%r" % (col, v))
    if typ == "Decimal":
        if not NUMERIC.match(v):
            rep.add("MUST", "%s conforms to NumericFormat" % col, where,
                    repr(v))
    elif typ == "DateTime":
        ok = bool(DATETIME.match(v))
        if ok:
            try:
                parse_time(v)
            except ValueError:
                ok = False
        if not ok:
            rep.add("MUST", "%s is YYYY-MM-DDTHH:mm:ssZ (DateTimeFormat)"
                    % col, where, repr(v))
    elif typ == "Currency":
        if v not in ISO4217:
            rep.add("MUST", "%s is an ISO 4217 national currency" % col,
                    where, repr(v))
    elif typ == "KeyValue":
        check_key_value(col, v, where, rep)
    elif typ == "JsonObject":
        try:
            o = json.loads(v)
        except ValueError:
            o = None
        if not isinstance(o, dict):
            rep.add("MUST", "%s is a serialized JSON object "
                    "(JsonObjectFormat)" % col, where, repr(v))
    else:
        if v.strip() == "" and not nullable:
            rep.add("SHOULD", "no blank strings in not-nullable columns",
                    where, col)
    if col in ALLOWED and v not in ALLOWED[col]:
        rep.add("MUST", "%s MUST be one of the allowed values" % col, where,
                repr(v))


def check_key_value(col, v, where, rep):
    """KeyValueFormat: a JSON object, unique keys, scalar values."""
    dup = []

    def pairs(ps):
        keys = [k for k, _ in ps]
        if len(set(keys)) != len(keys):
            dup.append(keys)
        return dict(ps)

    try:
        o = json.loads(v, object_pairs_hook=pairs)
    except ValueError:
        rep.add("MUST", "%s is serialized JSON (KeyValueFormat)" % col,
                where, repr(v))
        return None
    if not isinstance(o, dict):
        rep.add("MUST", "%s is a JSON object (KeyValueFormat)" % col, where)
        return None
    if dup:
        rep.add("MUST", "%s keys are unique (KeyValueFormat)" % col, where)
    for k, x in o.items():
        if isinstance(x, (dict, list)):
            rep.add("MUST", "%s values are not objects or arrays" % col,
                    where, k)
    return o


def check_unit(col, v, where, rep):
    """UnitFormat: SHOULD one of three shapes; a time part MUST be one of
    the listed time units."""
    if v is None:
        return
    m = re.match(r"^(?:[0-9]+ )?([A-Za-z]+)(?:-([A-Za-z]+))?(?:/([0-9]+ )?"
                 r"([A-Za-z]+))?$", v)
    if not m:
        rep.add("SHOULD", "%s conforms to UnitFormat" % col, where, repr(v))
        return
    plural_time = m.group(2)
    if plural_time and plural_time.rstrip("s") not in TIME_UNITS:
        rep.add("MUST", "%s time units are Year..Second" % col, where,
                repr(v))
    if m.group(4) and m.group(4).rstrip("s") not in TIME_UNITS:
        rep.add("MUST", "%s time units are Year..Second" % col, where,
                repr(v))
    if not m.group(1)[0].isupper():
        rep.add("MUST", "%s count units are capitalized" % col, where,
                repr(v))


# ---------------------------------------------------------------------------
# Row rules (nullability and cross-column requirements)

def scale(s):
    d = D(s).as_tuple()
    return max(0, -d.exponent)


def cost_matches(cost, unit, qty):
    """The product of a unit price and PricingQuantity MUST match the cost
    (ListCost = ListUnitPrice x PricingQuantity, ContractedCost =
    ContractedUnitPrice x PricingQuantity): the product of the values as
    written, exactly, once rounded half up to the cost's written decimals.
    Nothing else is allowed: a cost computed from a quantity the file does
    not show (e.g. an exact one that PricingQuantity truncates) may differ
    in its last decimal, and is a violation."""
    c, u, q = D(cost), D(unit), D(qty)
    return c == (u * q).quantize(D(1).scaleb(-scale(cost)),
                                 rounding=decimal.ROUND_HALF_UP)


def is_usage_like(r):
    return r.get("ChargeCategory") in ("Usage", "Purchase") and \
        r.get("ChargeClass") != "Correction"


def check_row(r, cols, where, rep):
    g = r.get
    cat = g("ChargeCategory")
    # ChargeClass: null unless a correction to a previous billing period.
    # ChargeFrequency: not Usage-Based for purchases.
    if cat == "Purchase" and g("ChargeFrequency") == "Usage-Based":
        rep.add("MUST", "ChargeFrequency is not Usage-Based for purchases",
                where)
    # Periods: inclusive start, exclusive end; a charge lies in its
    # billing period.
    try:
        cs, ce = parse_time(g("ChargePeriodStart")), parse_time(
            g("ChargePeriodEnd"))
        bs, be = parse_time(g("BillingPeriodStart")), parse_time(
            g("BillingPeriodEnd"))
    except (TypeError, ValueError):
        cs = None
    if cs is not None:
        if not cs < ce:
            rep.add("MUST", "ChargePeriodStart is before ChargePeriodEnd "
                    "(inclusive start, exclusive end)", where)
        if not bs < be:
            rep.add("MUST", "BillingPeriodStart is before BillingPeriodEnd",
                    where)
        if not (bs <= cs and ce <= be):
            rep.add("MUST", "the charge period lies in its billing period",
                    where, "%s..%s in %s..%s" % (cs, ce, bs, be))
    # ConsumedQuantity / ConsumedUnit.
    if "ConsumedQuantity" in cols:
        unused = g("CommitmentDiscountStatus") == "Unused"
        cq = g("ConsumedQuantity")
        if (cat != "Usage" or unused) and cq is not None:
            rep.add("MUST", "ConsumedQuantity is null unless usage", where)
        if cat == "Usage" and not unused and \
                g("ChargeClass") != "Correction" and cq is None:
            rep.add("MUST", "ConsumedQuantity MUST NOT be null for usage",
                    where)
        if (g("ConsumedUnit") is None) != (cq is None):
            rep.add("MUST", "ConsumedUnit is null iff ConsumedQuantity is",
                    where)
        check_unit("ConsumedUnit", g("ConsumedUnit"), where, rep)
    # PricingQuantity / PricingUnit.
    pq = g("PricingQuantity")
    if cat == "Tax" and pq is not None:
        rep.add("MUST", "PricingQuantity is null for Tax", where)
    if is_usage_like(r) and pq is None:
        rep.add("MUST", "PricingQuantity MUST NOT be null for usage and "
                "purchases", where)
    if (g("PricingUnit") is None) != (pq is None):
        rep.add("MUST", "PricingUnit is null iff PricingQuantity is", where)
    check_unit("PricingUnit", g("PricingUnit"), where, rep)
    # Prices, SKUs and PricingCategory: null for Tax, set for usage.
    for c in ("ListUnitPrice", "ContractedUnitPrice", "SkuId", "SkuPriceId",
              "PricingCategory"):
        if c not in cols:
            continue
        if cat == "Tax" and g(c) is not None:
            rep.add("MUST", "%s is null for Tax" % c, where)
        if is_usage_like(r) and g(c) is None:
            rep.add("MUST", "%s MUST NOT be null for usage and purchases"
                    % c, where)
    for c in ("ListUnitPrice", "ContractedUnitPrice"):
        v = g(c)
        if v is not None and NUMERIC.match(v) and D(v) < 0:
            rep.add("MUST", "%s is non-negative" % c, where)
    # Costs: unit price x PricingQuantity.
    if g("ChargeClass") != "Correction" and pq is not None and \
            NUMERIC.match(pq):
        for cost, unit in (("ListCost", "ListUnitPrice"),
                           ("ContractedCost", "ContractedUnitPrice")):
            u, c = g(unit), g(cost)
            if u is None or c is None or not NUMERIC.match(u) or \
                    not NUMERIC.match(c):
                continue
            if D(u) != 0 and D(pq) != 0:
                rep.products += 1
            if not cost_matches(c, u, pq):
                rep.add("MUST", "%s = %s x PricingQuantity" % (cost, unit),
                        where, "%s vs %s x %s" % (c, u, pq))
    # Credits: costs unrelated to other charges match BilledCost.
    if cat == "Credit":
        for c in ("ListCost", "ContractedCost", "EffectiveCost"):
            if g(c) != g("BilledCost"):
                rep.add("MUST", "%s matches BilledCost for credits" % c,
                        where)
    if cat == "Purchase" and g("EffectiveCost") not in (None,) and \
            NUMERIC.match(g("EffectiveCost") or "x") and \
            D(g("EffectiveCost")) != 0 and g("CommitmentDiscountId"):
        rep.add("MUST", "EffectiveCost is 0 for commitment purchases", where)
    # Paired nullability.
    for a, b in (("SubAccountId", "SubAccountName"),
                 ("SubAccountId", "SubAccountType"),
                 ("RegionId", "RegionName"),
                 ("ResourceId", "ResourceType"),
                 ("BillingAccountId", "BillingAccountType"),
                 ("SkuPriceId", "SkuPriceDetails"),
                 ("SkuId", "SkuMeter")):
        if a in cols and b in cols:
            if g(a) is None and g(b) is not None:
                rep.add("MUST", "%s is null when %s is null" % (b, a), where)
            if g(a) is not None and g(b) is None:
                level = "SHOULD" if b in ("SkuMeter", "SkuPriceDetails") \
                    else "MUST"
                rep.add(level, "%s is set when %s is" % (b, a), where)
    if "ResourceName" in cols:
        if g("ResourceId") is None and g("ResourceName") is not None:
            rep.add("MUST", "ResourceName is null when ResourceId is", where)
        if g("ResourceId") is not None and \
                g("ResourceName") == g("ResourceId"):
            rep.add("MUST", "ResourceName does not duplicate ResourceId",
                    where)
    # ServiceSubcategory's one parent.
    sub = g("ServiceSubcategory")
    if sub is not None:
        if sub not in SUBCATEGORIES:
            rep.add("MUST", "ServiceSubcategory is an allowed value", where,
                    repr(sub))
        elif SUBCATEGORIES[sub] != g("ServiceCategory"):
            rep.add("MUST", "ServiceSubcategory's parent is the row's "
                    "ServiceCategory", where, sub)


def check_sku_price_details(v, where, rep):
    if v is None:
        return
    o = check_key_value("SkuPriceDetails", v, where, Report())
    if o is None:
        return
    for k, x in o.items():
        if k in SKU_PRICE_PROPERTIES:
            want = SKU_PRICE_PROPERTIES[k]
            ok = isinstance(x, (int, float)) and not isinstance(x, bool) \
                if want == "Numeric" else isinstance(x, str)
            if not ok:
                rep.add("MUST", "FOCUS-defined SkuPriceDetails properties "
                        "have their type", where, k)
        elif not k.startswith("x_"):
            rep.add("MUST", "SkuPriceDetails keys begin with x_ unless "
                    "FOCUS-defined", where, k)


def check_tags(v, prefix, where, rep):
    if v is None or prefix is None:
        return
    o = check_key_value("Tags", v, where, Report())
    for k in (o or {}):
        if not k.startswith(prefix):
            rep.add("MUST", "provider-defined tag keys carry the provider's "
                    "prefix", where, k)


def check_allocated_row(r, cols, prefix, where, rep):
    """FOCUS 1.3, one row: the Allocated* columns are null together when
    the charge is not a split cost allocation, set together when it is
    (gpuledger has no unallocated portion), and their values are well
    formed."""
    g = r.get
    method, res = g("AllocatedMethodId"), g("AllocatedResourceId")
    if method is None:
        for c in ("AllocatedResourceId", "AllocatedMethodDetails",
                  "AllocatedTags"):
            if c in cols and g(c) is not None:
                rep.add("MUST", "%s is null when the charge is not a split "
                        "cost allocation (AllocatedMethodId null)" % c, where)
    elif res is None:
        # Allowed by the spec for an unallocated portion; gpuledger has none.
        rep.add("MUST", "AllocatedResourceId is set on an allocated charge "
                "(gpuledger: no unallocated portion)", where)
    if "AllocatedResourceName" in cols and \
            (res is None) != (g("AllocatedResourceName") is None):
        rep.add("MUST", "AllocatedResourceName is null iff "
                "AllocatedResourceId is", where)
    if method is not None and "AllocatedMethodDetails" in cols and \
            g("AllocatedMethodDetails") is None:
        rep.add("SHOULD", "AllocatedMethodDetails is set on an allocated "
                "charge", where)
    check_method_details(g("AllocatedMethodDetails"), where, rep)
    t = g("AllocatedTags")
    if t is not None:
        o = check_key_value("AllocatedTags", t, where, Report()) or {}
        tags = {}
        try:
            tags = json.loads(g("Tags") or "{}")
        except ValueError:
            pass
        for k in o:
            if prefix is not None and not k.startswith(prefix):
                rep.add("MUST", "provider-defined tag keys carry the "
                        "provider's prefix", where, k)
            if isinstance(tags, dict) and k in tags:
                rep.add("MUST", "AllocatedTags does not repeat a tag of "
                        "Tags", where, k)


def check_method_details(v, where, rep):
    """AllocatedMethodDetails: {"Elements": [objects]}; each element has a
    numeric AllocatedRatio, UsageUnit whenever UsageQuantity, FOCUS-defined
    properties of their type and others prefixed x_."""
    if v is None:
        return
    try:
        o = json.loads(v)
    except ValueError:
        return  # reported by check_value
    els = o.get("Elements") if isinstance(o, dict) else None
    if not isinstance(els, list) or not els:
        rep.add("MUST", "AllocatedMethodDetails has a top-level Elements "
                "array", where)
        return
    for e in els:
        if not isinstance(e, dict):
            rep.add("MUST", "each Elements item is an object", where)
            continue
        if "AllocatedRatio" not in e:
            rep.add("MUST", "each Elements object has an AllocatedRatio",
                    where)
        if "UsageQuantity" in e and "UsageUnit" not in e:
            rep.add("MUST", "UsageUnit is present when UsageQuantity is",
                    where)
        for k, x in e.items():
            want = ALLOCATED_PROPERTIES.get(k)
            if want is None:
                if not k.startswith("x_"):
                    rep.add("MUST", "allocation property keys begin with "
                            "x_ unless FOCUS-defined", where, k)
                continue
            ok = isinstance(x, (int, float, decimal.Decimal)) and \
                not isinstance(x, bool) if want == "Numeric" \
                else isinstance(x, str)
            if not ok:
                rep.add("MUST", "FOCUS-defined allocation properties have "
                        "their type", where, k)
    for k in o:
        if k != "Elements" and not k.startswith("x_"):
            rep.add("MUST", "allocation property keys begin with x_ unless "
                    "FOCUS-defined", where, k)


def check_allocation(rows, cols, known, rep):
    """FOCUS 1.3, across rows: the allocated charges of one origin charge
    share every dimension (DataGeneratorCalculatedSplitCostAllocation-
    Handling: dimensions MUST match the origin charge's) and its prices,
    and their AllocatedRatio values per UsageUnit MUST sum to 1. The origin
    charge of a row is therefore known by its dimensions: a row whose
    dimension differs from its siblings' leaves both groups short of 1."""
    dims = [c for c in cols if c in known and c not in METRICS and
            not c.startswith("Allocated")]
    groups = {}
    for n, r in enumerate(rows, 2):
        if r.get("AllocatedMethodId") is None:
            continue
        try:
            els = json.loads(r.get("AllocatedMethodDetails") or "",
                             parse_float=decimal.Decimal).get("Elements")
        except (ValueError, AttributeError):
            continue
        key = tuple(r.get(c) for c in dims)
        g = groups.setdefault(key, {"rows": [], "sums": {}, "prices": set()})
        g["rows"].append(n)
        g["prices"].add((r.get("ListUnitPrice"), r.get("ContractedUnitPrice")))
        for e in els if isinstance(els, list) else []:
            if isinstance(e, dict) and isinstance(
                    e.get("AllocatedRatio"), (int, decimal.Decimal)):
                u = e.get("UsageUnit")
                g["sums"][u] = g["sums"].get(u, D(0)) + D(e["AllocatedRatio"])
    for g in groups.values():
        where = "rows %s" % ",".join(map(str, g["rows"][:6]))
        for u, total in g["sums"].items():
            if total != 1:
                rep.add("MUST", "the AllocatedRatio values of one origin "
                        "charge's allocated charges sum to 1", where,
                        "%s: %s" % (u, total))
        if len(g["prices"]) != 1:
            rep.add("MUST", "allocated charges of one origin charge have "
                    "its unit prices", where)


# ---------------------------------------------------------------------------
# Dataset-wide relations

def check_relations(rows, rep):
    parents, details, svc_cat, svc_sub = {}, {}, {}, {}
    for r in rows:
        sp = r.get("SkuPriceId")
        if sp is not None:
            parents.setdefault(sp, set()).add(r.get("SkuId"))
            details.setdefault(sp, set()).add(r.get("SkuPriceDetails"))
        svc_cat.setdefault(r.get("ServiceName"), set()).add(
            r.get("ServiceCategory"))
        svc_sub.setdefault(r.get("ServiceName"), set()).add(
            r.get("ServiceSubcategory"))
    for sp, ps in parents.items():
        if len(ps) != 1:
            rep.add("MUST", "SkuPriceId has one and only one parent SkuId",
                    sp, repr(sorted(map(str, ps))))
    for sp, ds in details.items():
        if len(ds) != 1:
            rep.add("MUST", "SkuPriceDetails is associated with a given "
                    "SkuPriceId", sp)
    for s, cs in svc_cat.items():
        if len(cs) != 1:
            rep.add("MUST", "ServiceName has one and only one "
                    "ServiceCategory", str(s))
    for s, cs in svc_sub.items():
        if len(cs) != 1:
            rep.add("SHOULD", "ServiceName has one ServiceSubcategory",
                    str(s))


def check_months(rows, offset_s, rep):
    off = datetime.timedelta(seconds=offset_s)
    for n, r in enumerate(rows, 2):
        try:
            bs = parse_time(r["BillingPeriodStart"]) + off
            be = parse_time(r["BillingPeriodEnd"]) + off
        except (KeyError, TypeError, ValueError):
            continue
        nxt = (bs.replace(year=bs.year + 1, month=1) if bs.month == 12
               else bs.replace(month=bs.month + 1))
        if (bs.day, bs.hour, bs.minute, bs.second) != (1, 0, 0, 0) or \
                be != nxt:
            rep.add("MUST", "billing periods are calendar months (gpuledger)",
                    "row %d" % n, "%s..%s" % (bs, be))


def check_rates(rows, rates_path, currency, rep):
    """Against the billing file: ListUnitPrice and ContractedUnitPrice are
    its prices, PricingQuantity is device-ms / 3,600,000 truncated to 9
    decimals, and costs are exact: the price x that quantity rounded half up
    to 9 decimals (gpuledger's rule, DESIGN 8)."""
    with open(rates_path) as f:
        doc = json.load(f)
    priced = "rates" in doc
    rates = {}
    for e in doc.get("rates", []):
        lst = D(str(e["listUnitPrice"]))
        billed = D(str(e.get("billedUnitPrice", e["listUnitPrice"])))
        rates[(e["class"], e["currency"])] = (lst, billed)
    q9 = D("0.000000001")
    for n, r in enumerate(rows, 2):
        where = "row %d" % n
        cls, cur = r.get("x_DeviceClass"), r.get("BillingCurrency")
        if currency and cur != currency:
            rep.add("MUST", "BillingCurrency is the one asked for", where)
        lst, billed = rates.get((cls, cur), (None, None)) if priced \
            else (D(0), D(0))
        if lst is None:
            rep.add("MUST", "every billed class has a rate", where, cls)
            continue
        if not re.match(r"^[0-9]+$", r.get("x_DeviceMilliseconds") or ""):
            rep.add("MUST", "x_DeviceMilliseconds is an integer", where)
            continue
        ms = D(r["x_DeviceMilliseconds"])
        qty = (ms / D(3600000)).quantize(q9, rounding=decimal.ROUND_DOWN)
        for col, want in (("ListUnitPrice", lst),
                          ("ContractedUnitPrice", billed),
                          ("PricingQuantity", qty),
                          ("ConsumedQuantity", qty),
                          ("ListCost", (lst * qty).quantize(
                              q9, rounding=decimal.ROUND_HALF_UP)),
                          ("ContractedCost", (billed * qty).quantize(
                              q9, rounding=decimal.ROUND_HALF_UP)),
                          ("BilledCost", (billed * qty).quantize(
                              q9, rounding=decimal.ROUND_HALF_UP)),
                          ("EffectiveCost", (billed * qty).quantize(
                              q9, rounding=decimal.ROUND_HALF_UP))):
            v = r.get(col)
            if v is None or not NUMERIC.match(v) or D(v) != want:
                rep.add("MUST", "%s is exact from the rates and "
                        "x_DeviceMilliseconds" % col, where,
                        "%s, want %s" % (v, want))


# ---------------------------------------------------------------------------

def check(path, features, lacks, tag_prefix=None, rates=None, currency=None,
          offset_s=None, version="1.2"):
    rep = Report()
    cols, rows = read_rows(path)
    known = check_columns(cols, features, lacks, rep, version)
    for n, r in enumerate(rows, 2):
        where = "row %d" % n
        for c in cols:
            if c in known:
                typ, nullable = known[c][0], known[c][1]
                check_value(c, typ, nullable, r[c], where, rep)
        check_row(r, cols, where, rep)
        check_sku_price_details(r.get("SkuPriceDetails"), where, rep)
        check_tags(r.get("Tags"), tag_prefix, where, rep)
        if version == "1.3":
            check_allocated_row(r, cols, tag_prefix, where, rep)
    if version == "1.3":
        check_allocation(rows, cols, known, rep)
    check_relations(rows, rep)
    if offset_s is not None:
        check_months(rows, offset_s, rep)
    if rates is not None:
        check_rates(rows, rates, currency, rep)
    return rep, len(rows)


def main(argv):
    args = {"--features": "", "--lacks": "", "--tag-prefix": None,
            "--rates": None, "--currency": None, "--offset": None,
            "--version": "1.2"}
    files = []
    i = 0
    while i < len(argv):
        if argv[i] in args:
            if i + 1 == len(argv):
                print(__doc__, file=sys.stderr)
                return 2
            args[argv[i]] = argv[i + 1]
            i += 2
        elif argv[i].startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            files.append(argv[i])
            i += 1
    if len(files) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    if args["--version"] not in ("1.2", "1.3"):
        print(__doc__, file=sys.stderr)
        return 2
    feats = set(filter(None, args["--features"].split(",")))
    lacks = set(filter(None, args["--lacks"].split(",")))
    off = parse_offset(args["--offset"]) if args["--offset"] else None
    rep, n = check(files[0], feats, lacks, args["--tag-prefix"],
                   args["--rates"], args["--currency"], off,
                   args["--version"])
    for line in rep.must + rep.should:
        print(line)
    print("focus_check: %s: %d rows, %d MUST violations, %d SHOULD "
          "notes, %d priced cost products" % (files[0], n, rep.count("MUST"),
                                              rep.count("SHOULD"),
                                              rep.products))
    return 1 if rep.count("MUST") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
