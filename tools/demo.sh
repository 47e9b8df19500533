#!/bin/sh
# `make run`: the main job on an embedded default, no cluster needed.
#
# Builds a ledger under var/demo from a simulated Cozystack cluster (a
# recorded stream made by `gpuledger simulate`, ingested by `gpuledger watch
# --from`), starts `gpuledger serve` on 127.0.0.1:$PORT (default 8420; a
# free port, printed, when 8420 is taken) and prints commands to try.
# Ctrl-C stops it. Run twice, it reuses the ledger when it verifies, else
# it makes a new one.
#
# DEMO_SELFTEST=1 runs every printed command itself, checks each answer, and
# stops the server: tests/demo_cli.sh uses it to keep this page true. With
# DEMO_TOUR=FILE the self-test also writes the README's tour (commands and
# their real output, with this run's URL, directory and binary written as
# a default run's) to FILE; DEMO_FAKETIME="YYYY-MM-DD HH:MM:SS" runs serve
# under a frozen wall clock (faketime), so that the verdicts' times, and
# so the chain heads after them, are the same in every run.
set -eu
bin=${GPULEDGER:-./gpuledger}
dir=${DEMO_DIR:-var/demo}
port=${PORT:-8420}
url="http://127.0.0.1:$port"
selftest=${DEMO_SELFTEST:-}

say() { printf '%s\n' "$*"; }

mkdir -p "$dir"
if [ -d "$dir/db" ] && "$bin" verify --db "$dir/db" >/dev/null 2>&1; then
	say "== reusing the demo ledger in $dir/db ($("$bin" verify --db "$dir/db"))"
else
	rm -rf "$dir/db"
	say "== simulating a Cozystack cluster: 40 tenants, 30 days, 200000 watch events"
	"$bin" simulate --seed 7 --events 200000 --tenants 40 --days 30 \
		--out "$dir/stream.ndjson"
	say "== ingesting it: gpuledger watch --from $dir/stream.ndjson --db $dir/db"
	"$bin" watch --from "$dir/stream.ndjson" --db "$dir/db"
	# The stream is several times the ledger's size and the demo does not
	# need it again (a second run reuses the ledger): keep only the ledger.
	rm -f "$dir/stream.ndjson"
fi
# A second, short ledger made to show each finding of the reconciliation
# audit (an object older than admission, a bypass, a race of two
# admissions, a budget lowered): `simulate --cases` and its admission
# reviews, fed to a live watcher while a serve answers each review once the
# lines before it are observed (tests/reconcile/drive.py).
if ! { [ -d "$dir/cases" ] && "$bin" verify --db "$dir/cases" >/dev/null 2>&1; }; then
	rm -rf "$dir/cases"
	say "== the reconciliation cases: gpuledger simulate --cases, watched and admitted into $dir/cases"
	"$bin" simulate --cases --start 2026-02-01T00:00:00Z \
		--reviews "$dir/cases.reviews" --out "$dir/cases.ndjson" &&
		python3 "$(dirname "$0")/../tests/reconcile/drive.py" "$bin" "$dir/cases.ndjson" \
			"$dir/cases.reviews" "$dir/cases" || {
		say "the reconciliation cases could not be built" >&2
		exit 1
	}
	rm -f "$dir/cases.ndjson" "$dir/cases.reviews"
fi
say "== disk used by the demo: $(du -sh "$dir" | cut -f1) in $dir (rm -rf $dir frees it)"

# A tenant with room for one device of some class, for an allowed admission;
# the same request for many devices is denied.
pick=$("$bin" replay --db "$dir/db" --json | python3 -c '
import json, sys
st = json.load(sys.stdin)
for t in st["tenants"]:
    for c, r in sorted(t["remaining"].items()):
        if r["remaining"] is not None and r["remaining"] >= 1 and not r["blocked"]:
            print(t["namespace"], c, r["remaining"])
            sys.exit(0)
sys.exit(1)')
set -- $pick
ns=$1 cls=$2 left=$3
from=$("$bin" replay --db "$dir/db" --json --at 1 | python3 -c '
import json, sys; print(json.load(sys.stdin)["time"][:10] + "T00:00:00Z")')

# start_serve HOST:PORT: serve in the background ($server), its output in
# $dir/serve.log; waits for its "listening on" line and sets $port to the
# port it bound, or returns 1 when it exits (or stays silent) first.
start_serve() {
	: >"$dir/serve.log"
	if [ -n "${DEMO_FAKETIME:-}" ]; then
		# libfaketime preloaded into serve itself (the faketime command
		# would stand between us and serve's pid); monotonic time stays
		# real, so the server's timers run. A sanitizer runtime
		# tolerates the preload.
		lib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1)
		[ -n "$lib" ] || { say "DEMO_FAKETIME: libfaketime not found" >&2; exit 1; }
		FAKETIME="$DEMO_FAKETIME" FAKETIME_DONT_FAKE_MONOTONIC=1 LD_PRELOAD=$lib \
			ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
			"$bin" serve --db "$dir/db" --listen "$1" >"$dir/serve.log" 2>&1 &
	else
		"$bin" serve --db "$dir/db" --listen "$1" >"$dir/serve.log" 2>&1 &
	fi
	server=$!
	j=0
	while :; do
		port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$dir/serve.log")
		[ -z "$port" ] || return 0
		kill -0 $server 2>/dev/null && [ $j -lt 100 ] || return 1
		j=$((j + 1))
		sleep 0.1
	done
}
# 8420 unless PORT says otherwise. When 8420 is taken (a second `make run`,
# another program) a demo must not talk to that server as if it were its
# own: serve on a free port the kernel picks, and say which.
want=$port
if ! start_serve "127.0.0.1:$want"; then
	if [ -z "${PORT:-}" ] && grep -q 'address already in use' "$dir/serve.log"; then
		say "== port $want is taken: serving on a free port instead"
		start_serve 127.0.0.1:0 || true
	fi
	if [ -z "$port" ]; then
		say "gpuledger serve did not come up; see $dir/serve.log" >&2
		cat "$dir/serve.log" >&2
		exit 1
	fi
fi
url="http://127.0.0.1:$port"
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null; say "== stopped"; exit 0' INT TERM
trap 'kill -TERM $server 2>/dev/null || true' EXIT
i=0
until curl -sf "$url/readyz" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 $server 2>/dev/null; then
		say "gpuledger serve did not come up; see $dir/serve.log" >&2
		cat "$dir/serve.log" >&2
		exit 1
	fi
	sleep 0.1
done

small="{\"namespace\":\"$ns\",\"kind\":\"VMInstance\",\"name\":\"demo-small\",\"old\":null,\"new\":{\"gpus\":[{\"class\":\"$cls\",\"count\":1}]}}"
big="{\"namespace\":\"$ns\",\"kind\":\"VMInstance\",\"name\":\"demo-big\",\"old\":null,\"new\":{\"gpus\":[{\"class\":\"$cls\",\"count\":$((left + 100))}]}}"

# The commands to try, in the order they are printed: a "# comment" line,
# then the command with $url, $dir and $bin left for sh to expand. The
# self-test runs exactly these, once each and in this order, so that the
# README's tour (DEMO_TOUR) is what a newcomer's first `make run` answers:
# the same verdict ids, seqs and counts.
steps=$(cat <<EOF
# what $ns may still reserve in total (drop the jq for every class)
curl -s \$url/v1/tenants/$ns/remaining | jq -c .total
# an admission that fits ($cls has $left left): allowed, and recorded
curl -s -X POST \$url/v1/admission -d '$small' | jq -c '{id, allowed, reason, basisSeq, seq}'
# one that does not: denied (drop the jq to see every check)
curl -s -X POST \$url/v1/admission -d '$big' | jq -c '{id, allowed, reason, message}'
# re-derive every recorded verdict from the log (exit 1 on any mismatch)
\$bin audit --db \$dir/db
# prove the log was not rewritten
\$bin verify --db \$dir/db
# GPU-hours per tenant and class, one row per day (FOCUS; drop format=ndjson for CSV)
curl -s "\$url/v1/export?from=$from&step=day&format=ndjson" | head -2 | jq -c '{ChargePeriodStart, AllocatedResourceName, ConsumedQuantity, ConsumedUnit, BilledCost}'
# Prometheus metrics, linted
curl -s \$url/metrics | promtool check metrics && echo metrics ok
# the state as a table (drop the head for all of it)
\$bin replay --db \$dir/db | head -8
# did every reservation pass admission and every budget hold? (the cases ledger; exit 1: found some)
\$bin reconcile --db \$dir/cases | jq -c '.overshoots[] | {tenant, fromSeq, toSeq, causes: [.causes[] | .type]}'
EOF
)
# show TEXT: a step's command as it reads for this run.
show() {
	printf '%s' "$1" | sed -e "s|\$url|$url|g" -e "s|\$dir|$dir|g" -e "s|\$bin|$bin|g"
}

printf '\n== gpuledger serve is listening on %s (log: %s/serve.log).\n' "$url" "$dir"
printf '   The console: %s/ui in a browser (no token needed here). Or try:\n' "$url"
printf '%s\n' "$steps" | while IFS= read -r line; do
	case $line in
	'#'*) printf '\n  %s\n' "$line" ;;
	*) printf '  %s\n' "$(show "$line")" ;;
	esac
done
printf '\nCtrl-C stops the server.\n'

if [ -z "$selftest" ]; then
	wait $server
	exit 0
fi

# Self-test: run each printed command once, in order (its output in
# $dir/step.N), then check the answers. With DEMO_TOUR, each command as
# printed for a default run, then what it printed now.
fail=0
check() { # NAME FILE PATTERN
	if grep -q -- "$3" "$2"; then say "ok: $1"; else
		say "FAIL: $1: $(head -c 300 "$2")"
		fail=1
	fi
}
tour=${DEMO_TOUR:-}
n=0
printf '%s\n' "$steps" | grep -v '^#' >"$dir/steps"
while IFS= read -r cmd; do
	n=$((n + 1))
	url=$url dir=$dir bin=$bin sh -c "$cmd" >"$dir/step.$n" 2>&1 </dev/null
	[ -n "$tour" ] || continue
	[ $n -eq 1 ] || printf '\n'
	printf '$ %s\n' "$(printf '%s' "$cmd" | sed -e "s|\$url|http://127.0.0.1:8420|g" \
		-e "s|\$dir|var/demo|g" -e "s|\$bin|./gpuledger|g")"
	sed -e "s|$url|http://127.0.0.1:8420|g" -e "s|$dir|var/demo|g" "$dir/step.$n"
done <"$dir/steps" >"${tour:-/dev/null}"
check remaining "$dir/step.1" '"remaining"'
check allowed "$dir/step.2" '"allowed":true'
check denied "$dir/step.3" '"allowed":false'
check audit "$dir/step.4" '^ok'
check verify "$dir/step.5" '^ok'
check export "$dir/step.6" 'GPU-Hours'
check metrics "$dir/step.7" '^metrics ok$'
check replay "$dir/step.8" 'chainHead'
check reconcile "$dir/step.9" '"causes":\["race"\]'
curl -s "$url/ui" >"$dir/step.ui"
check console "$dir/step.ui" '<title>gpuledger console</title>'
rm -f "$dir/steps" "$dir"/step.*
kill -TERM $server
wait $server || true
trap - EXIT
exit $fail
