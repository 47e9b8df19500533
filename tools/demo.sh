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

cat <<MSG

== gpuledger serve is listening on $url (log: $dir/serve.log).
   The console: $url/ui in a browser ("Continue without a token"). Or try:

  # what $ns may still reserve, per class and in total
  curl -s $url/v1/tenants/$ns/remaining

  # an admission that fits ($cls has $left left): allowed, and recorded
  curl -s -X POST $url/v1/admission -d '$small'

  # one that does not: denied, with every check listed
  curl -s -X POST $url/v1/admission -d '$big'

  # re-derive every recorded verdict from the log (exit 1 on any mismatch)
  $bin audit --db $dir/db

  # prove the log was not rewritten
  $bin verify --db $dir/db

  # GPU-hours per tenant and class, one row per day (FOCUS CSV)
  curl -s '$url/v1/export?from=$from&step=day' | head -5

  # Prometheus metrics (promtool check metrics lints them)
  curl -s $url/metrics | promtool check metrics

  # the whole state, as a table
  $bin replay --db $dir/db | less

Ctrl-C stops the server.
MSG

if [ -z "$selftest" ]; then
	wait $server
	exit 0
fi

# Self-test: run what was printed and check the answers.
fail=0
check() { # NAME COMMAND-OUTPUT PATTERN
	if printf '%s' "$2" | grep -q -- "$3"; then say "ok: $1"; else
		say "FAIL: $1: $(printf '%s' "$2" | head -c 300)"
		fail=1
	fi
}
check remaining "$(curl -s "$url/v1/tenants/$ns/remaining")" '"classes"'
check allowed "$(curl -s -X POST "$url/v1/admission" -d "$small")" '"allowed":true'
check denied "$(curl -s -X POST "$url/v1/admission" -d "$big")" '"allowed":false'
check audit "$("$bin" audit --db "$dir/db" 2>&1)" 'ok'
check verify "$("$bin" verify --db "$dir/db" 2>&1)" '^ok'
check export "$(curl -s "$url/v1/export?from=$from&step=day" | head -5)" 'GPU-Hours'
check replay "$("$bin" replay --db "$dir/db" | head -3)" 'chainHead'
check console "$(curl -s "$url/ui")" '<title>gpuledger console</title>'
lint=$(curl -s "$url/metrics" | promtool check metrics 2>&1; echo "exit $?")
check metrics "$lint" '^exit 0$'
tour=${DEMO_TOUR:-}
if [ -n "$tour" ]; then
	# Each command as printed for a default run, then what it printed now.
	step() { # COMMAND-TEXT (run with sh; $url, $dir, $bin as in this run)
		shown=$(printf '%s' "$1" | sed -e "s|\$url|http://127.0.0.1:8420|g" \
			-e "s|\$dir|var/demo|g" -e "s|\$bin|./gpuledger|g")
		printf '$ %s\n' "$shown"
		url=$url dir=$dir bin=$bin sh -c "$1" 2>&1 | sed -e "s|$url|http://127.0.0.1:8420|g" \
			-e "s|$dir|var/demo|g"
		printf '\n'
	}
	{
		step "curl -s \$url/v1/tenants/$ns/remaining | jq -c '.total'"
		step "curl -s -X POST \$url/v1/admission -d '$big' | jq -c '{id, allowed, reason, message}'"
		step "curl -s -X POST \$url/v1/admission -d '$small' | jq -c '{id, allowed, reason, basisSeq, seq}'"
		step '$bin audit --db $dir/db'
		step '$bin verify --db $dir/db'
		step "curl -s \"\$url/v1/export?from=$from&step=day&format=ndjson\" | head -2 | jq -c '{ChargePeriodStart, SubAccountId, x_DeviceClass, ConsumedQuantity, ConsumedUnit, BilledCost}'"
		step '$bin replay --db $dir/db | head -8'
	} | sed '$d' >"$tour"
fi
kill -TERM $server
wait $server || true
trap - EXIT
exit $fail
