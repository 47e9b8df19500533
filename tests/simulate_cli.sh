#!/bin/sh
# Integration test of `gpuledger simulate` (issue 7): the recorded stream it
# writes is deterministic, exactly --events lines long, valid watch events of
# the watched kinds (DESIGN 2, 6) with non-decreasing times, sized and mixed
# as the options say, and, when `gpuledger watch` is built, ingests into a
# ledger that verifies, with tenants holding units, some overcommit, and no
# NOTEs but the deliberately invalid quotas.
# Usage: tests/simulate_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$(dirname "$0")/lib/cli.sh"


# sim NAME ARGS...: runs simulate with ARGS into $tmp/NAME, status in $rc.
sim() {
	name=$1
	shift
	"$bin" simulate "$@" >"$tmp/$name" 2>"$tmp/$name.err"
	rc=$?
	[ "$rc" -eq 0 ] || bad "simulate $*: exit $rc ($(head -c 300 "$tmp/$name.err"))"
}

# check FILE ARGS...: tests/simulate_check.py-like checks written inline, so
# that this script is one file. Prints one line per failed property and a
# last line "gpu_share=<fraction>"; exit 1 when a property failed.
cat >"$tmp/check.py" <<'EOF'
import json, re, sys

path = sys.argv[1]
opts = dict(a.split("=", 1) for a in sys.argv[2:])
watched = {("v1", "Namespace"), ("apps.cozystack.io/v1alpha1", "Tenant"),
           ("apps.cozystack.io/v1alpha1", "VMInstance"),
           ("apps.cozystack.io/v1alpha1", "KubernetesNodes"),
           ("v1", "Pod"), ("resource.k8s.io/v1", "ResourceClaim"),
           ("v1", "Node"), ("v1", "ConfigMap")}
label = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
time_re = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")
errors = []
def err(msg):
    if len(errors) < 20:
        errors.append(msg)

prev = ""
pods = gpu_pods = 0
kinds = set()
tenants = {}
uids = {}
for n, line in enumerate(open(path, encoding="utf-8"), 1):
    try:
        ev = json.loads(line)
    except ValueError as e:
        err("line %d: not JSON: %s" % (n, e))
        continue
    if not isinstance(ev, dict) or set(ev) != {"type", "object", "time"}:
        err("line %d: keys %s" % (n, sorted(ev) if isinstance(ev, dict) else ev))
        continue
    t, obj = ev["type"], ev["object"]
    if t not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
        err("line %d: type %r" % (n, t))
    if not time_re.match(ev["time"]):
        err("line %d: time %r" % (n, ev["time"]))
    if ev["time"] < prev:
        err("line %d: time %s before %s" % (n, ev["time"], prev))
    prev = ev["time"]
    if "start" in opts and not opts["start"] <= ev["time"] <= opts["end"]:
        err("line %d: time %s outside the span" % (n, ev["time"]))
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key not in watched:
        err("line %d: not a watched resource: %s" % (n, key))
    kinds.add(key[1])
    meta = obj.get("metadata", {})
    if t == "BOOKMARK":
        if set(meta) != {"resourceVersion"}:
            err("line %d: bookmark metadata %s" % (n, meta))
        continue
    name, ns = meta.get("name", ""), meta.get("namespace")
    if not label.match(name) or len(name) > 63:
        err("line %d: name %r is not a DNS-1123 label" % (n, name))
    if not meta.get("uid") or not meta.get("resourceVersion"):
        err("line %d: no uid or resourceVersion" % n)
    ref = (key[1], ns, name)
    if t == "ADDED":
        if ref in uids and key[1] != "ResourceClaim":
            err("line %d: %s added twice" % (n, ref))
        uids[ref] = meta.get("uid")
    elif uids.get(ref) != meta.get("uid"):
        err("line %d: %s %s of an object not added (or another uid)" % (n, t, ref))
    if t == "DELETED":
        uids.pop(ref, None)
    if key[1] == "ConfigMap" and (ns, name) != ("cozy-system", "gpu-classes"):
        err("line %d: ConfigMap %s/%s" % (n, ns, name))
    if key[1] == "Namespace" and name.startswith("tenant-"):
        own = name.split("-")
        tenants[name] = 0 if name == "tenant-root" else len(own) - 1
        want = {"tenant.cozystack.io/" + "-".join(own[:i])
                for i in range(2, len(own) + 1)} | {"tenant.cozystack.io/tenant-root"}
        got = {k for k in meta.get("labels", {}) if k.startswith("tenant.cozystack.io/")}
        if got != want:
            err("line %d: %s labels %s, want %s" % (n, name, sorted(got), sorted(want)))
    if key[1] == "Tenant" and ("-" in name or not ns.startswith("tenant-")):
        err("line %d: Tenant %s/%s" % (n, ns, name))
    if key[1] == "Pod":
        pods += 1
        if "nvidia.com/" in line:
            gpu_pods += 1
        if obj["status"]["phase"] not in ("Pending", "Running", "Succeeded", "Failed"):
            err("line %d: pod phase %r" % (n, obj["status"]["phase"]))
    if key[1] == "ResourceClaim":
        for r in obj["spec"]["devices"]["requests"]:
            if set(r["exactly"]) - {"deviceClassName", "count", "allocationMode"}:
                err("line %d: claim request %s" % (n, r))

if "lines" in opts and n != int(opts["lines"]):
    err("%d lines, want %s" % (n, opts["lines"]))
if "tenants" in opts and len(tenants) != int(opts["tenants"]):
    err("%d tenant namespaces, want %s" % (len(tenants), opts["tenants"]))
if "depth" in opts and tenants and max(tenants.values()) > int(opts["depth"]):
    err("a tenant %d levels deep, want at most %s" % (max(tenants.values()), opts["depth"]))
if "kinds" in opts and set(opts["kinds"].split(",")) - kinds:
    err("kinds missing: %s" % sorted(set(opts["kinds"].split(",")) - kinds))
for e in errors:
    print(e)
print("gpu_share=%.4f" % (gpu_pods / pods if pods else 0))
sys.exit(1 if errors else 0)
EOF

# check NAME ARGS...: runs the checker on $tmp/NAME.
check() {
	name=$1
	shift
	if python3 "$tmp/check.py" "$tmp/$name" "$@" >"$tmp/$name.check"; then
		ok
	else
		bad "$name: $(head -n 5 "$tmp/$name.check")"
	fi
}

# share NAME LO HI: the GPU pod share the checker printed lies in [LO, HI].
share() {
	s=$(sed -n 's/^gpu_share=//p' "$tmp/$1.check")
	if python3 -c "import sys; sys.exit(not ($2 <= $s <= $3))"; then
		ok
	else
		bad "$1: GPU pod share $s outside [$2, $3]"
	fi
}

# Determinism: the same options give the same bytes, on stdout or --out;
# another seed gives another stream.
sim a --seed 42 --events 3000
sim b --seed 42 --events 3000
"$bin" simulate --seed 42 --events 3000 --out "$tmp/c" && ok || bad "--out failed"
sim d --seed 43 --events 3000
cmp -s "$tmp/a" "$tmp/b" && ok || bad "same seed, different bytes"
cmp -s "$tmp/a" "$tmp/c" && ok || bad "--out differs from stdout"
cmp -s "$tmp/a" "$tmp/d" && bad "seeds 42 and 43 gave the same bytes" || ok

# Exactly --events lines, in the setup and in the steady mix.
for n in 0 1 7 64 2500; do
	sim n$n --events $n --tenants 30
	got=$(wc -l <"$tmp/n$n")
	[ "$got" -eq "$n" ] && ok || bad "--events $n gave $got lines"
done

# The default mix: valid watch events of every watched kind, tenant tree
# as asked, few GPU pods.
sim mix --seed 5 --events 20000 --tenants 40 --depth 3
check mix lines=20000 tenants=40 depth=3 \
	kinds=Namespace,Tenant,VMInstance,KubernetesNodes,Pod,ResourceClaim,Node,ConfigMap
share mix 0.005 0.06

# Claims owned by a VMInstance are named by the claim name rule (DESIGN
# 5.5) for one of its class entries, as `gpuledger eval ClaimName` says;
# long VMInstance names take the hashed form.
python3 - "$tmp/mix" >"$tmp/claims.in" 2>"$tmp/claims.want" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    if '"kind":"ResourceClaim"' not in line or '"ADDED"' not in line:
        continue
    obj = json.loads(line)["object"]
    refs = obj["metadata"].get("ownerReferences", [])
    if not refs:
        continue
    vmi = ("vm-instance-" + refs[0]["name"])[:63].rstrip("-")
    for i in (1, 2, 3):
        print(json.dumps({"function": "ClaimName",
                          "input": {"vmi": vmi, "device": "gpu%d" % i}}))
    print(obj["metadata"]["name"], vmi, file=sys.stderr)
EOF
"$bin" eval <"$tmp/claims.in" >"$tmp/claims.out" 2>&1
python3 - "$tmp/claims.out" "$tmp/claims.want" >"$tmp/claims.res" <<'EOF' && ok || bad "claim names: $(cat "$tmp/claims.res")"
import json, sys
out = [json.loads(l)["output"]["name"] for l in open(sys.argv[1])]
want = [l.split() for l in open(sys.argv[2])]
wrong = [w for i, (w, _) in enumerate(want) if w not in out[3 * i:3 * i + 3]]
hashed = [w for w, vmi in want if not w.startswith(vmi + "-gpu")]
if len(out) != 3 * len(want) or wrong or len(want) < 20 or not hashed:
    print("%d claims, %d wrong (%s), %d hashed" % (len(want), len(wrong), wrong[:3], len(hashed)))
    sys.exit(1)
EOF

# A deep, wide tree still gives DNS-1123 namespace names; depth 1 is flat.
sim deep --seed 9 --events 4000 --tenants 1500 --depth 6
check deep lines=4000 tenants=1500 depth=6
sim flat --seed 9 --events 400 --tenants 50 --depth 1
check flat tenants=50 depth=1

# --gpu-pod-share and --all-gpu-pods set the share of GPU pods.
sim share10 --seed 3 --events 20000 --gpu-pod-share 0.1
check share10
share share10 0.06 0.16
sim share0 --seed 3 --events 20000 --gpu-pod-share 0
check share0
share share0 0 0.02
sim allgpu --seed 3 --events 10000 --all-gpu-pods
check allgpu
share allgpu 1 1

# The span: --days, and --start/--end.
sim span --events 3000 --start 2025-03-01T00:00:00Z --days 2
check span start=2025-03-01T00:00:00.000000000Z end=2025-03-03T00:00:00.000000000Z
sim span2 --events 3000 --start 2025-03-01T12:00:00Z --end 2025-03-01T13:00:00Z
check span2 start=2025-03-01T12:00:00.000000000Z end=2025-03-01T13:00:00.000000000Z
last=$(tail -n 1 "$tmp/span2" | sed 's/.*"time":"\([^"]*\)".*/\1/')
expr "$last" \> "2025-03-01T12:50" >/dev/null && ok ||
	bad "the span is not used up to --end (last time $last)"

# A reader that goes away ends the command quietly.
"$bin" simulate --events 100000 2>"$tmp/pipe.err" | head -n 1 >/dev/null
[ ! -s "$tmp/pipe.err" ] && ok || bad "| head: $(cat "$tmp/pipe.err")"

# --help exits 0; bad options exit 2 with a message.
"$bin" simulate --help >"$tmp/help" && grep -q -- '--gpu-pod-share' "$tmp/help" && ok ||
	bad "simulate --help"
for args in "--nope" "--events" "--events x" "--events -1" "--tenants 0" \
	"--tenants 20001" "--depth 0" "--depth 7" "--gpu-pod-share 1.5" \
	"--gpu-pod-share x" "--gpu-pod-share nan" "--gpu-pod-share -0.1" \
	"--days 2 --end 2026-02-01T00:00:00Z" "--start yesterday" \
	"--start 2026-02-01T00:00:00Z --end 2026-01-01T00:00:00Z" \
	"--days 36501" "--events 1000000001" "--out $tmp/no/such/dir" \
	"--all-gpu-pods=1" "positional"; do
	# shellcheck disable=SC2086
	"$bin" simulate $args >/dev/null 2>"$tmp/u.err"
	rc=$?
	if [ "$rc" -eq 2 ] && [ -s "$tmp/u.err" ]; then ok; else
		bad "simulate $args: exit $rc, stderr '$(head -c 200 "$tmp/u.err")'"
	fi
done

# End to end (a `gpuledger watch` that does not run is a failure): the stream ingests, the
# ledger verifies, tenants hold units, some budget is overcommitted, and the
# only NOTEs are the deliberately invalid quotas (none with --no-invalid).
if "$bin" watch --help >/dev/null 2>&1; then
	for mode in invalid valid; do
		flag=
		[ $mode = valid ] && flag=--no-invalid
		db=$tmp/db-$mode
		sim e2e-$mode --seed 11 --events 20000 --tenants 60 $flag
		if "$bin" watch --db "$db" --from "$tmp/e2e-$mode" \
			>"$tmp/w.out" 2>"$tmp/w.err"; then ok; else
			bad "watch ($mode): $(head -c 300 "$tmp/w.err")"
		fi
		"$bin" verify --db "$db" >/dev/null 2>"$tmp/v.err" && ok ||
			bad "verify ($mode): $(head -c 300 "$tmp/v.err")"
		"$bin" log --db "$db" >"$tmp/log-$mode" && ok || bad "log ($mode)"
		"$bin" replay --db "$db" --json >"$tmp/replay-$mode" && ok ||
			bad "replay ($mode)"
		python3 - "$tmp/log-$mode" "$tmp/replay-$mode" $mode \
			>"$tmp/e2e.out" <<'EOF' && ok || bad "e2e ($mode): $(cat "$tmp/e2e.out")"
import json, sys
log, replay, mode = sys.argv[1:]
notes = [json.loads(l) for l in open(log) if '"type":"NOTE"' in l]
# The end of the stream is the watcher's complete list: one NOTE Synced,
# the last event but TICKs; the other NOTEs are what the input is worth.
synced = [n for n in notes if n.get("code") == "Synced"]
if len(synced) != 1:
    print("NOTE Synced %d times, want once" % len(synced))
    sys.exit(1)
notes = [n for n in notes if n.get("code") != "Synced"]
codes = {n.get("code") for n in notes}
st = json.load(open(replay))
holding = [t for t in st["tenants"] if t["reserved"]]
over = [t for t in st["tenants"] if t["overcommitted"]]
alloc = sum(c["allocated"] for n in st["nodes"] for c in n["classes"].values())
problems = []
if mode == "invalid" and (not notes or codes != {"InvalidBudget"}):
    problems.append("NOTE codes %s (%d notes)" % (sorted(map(str, codes)), len(notes)))
if mode == "valid" and notes:
    problems.append("NOTEs: %s" % [n.get("message") for n in notes[:3]])
if len(holding) < 5:
    problems.append("only %d tenants reserve units" % len(holding))
if not over:
    problems.append("no overcommitted tenant")
if alloc <= 0 or len(st["classes"]) != 3:
    problems.append("allocated %d, classes %d" % (alloc, len(st["classes"])))
print("; ".join(problems))
sys.exit(1 if problems else 0)
EOF
	done
else
	bad "gpuledger watch --help failed: the end-to-end part cannot run"
fi

echo "simulate_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
