#!/bin/sh
# `make bench`: every figure of DESIGN 10, and the same work on the SQLite
# and PostgreSQL baselines, as one table (median of BENCH_RUNS runs with
# min-max beside it). Not a test: nothing is asserted; targets are printed
# beside the figures. Sized to finish in under 10 minutes on the 2-core
# development machine with the Makefile's defaults.
#
# Installs what it needs only when missing (never through
# tools/install-deps.sh: tests must not need these): libsqlite3-dev,
# libpq-dev and postgresql for the baselines, wrk for the HTTP figures.
# Every server it starts (gpuledger serve, PostgreSQL) listens on loopback
# only and is stopped on exit; every loop is bounded in count and time.
#
# Knobs (environment, set by the Makefile): BENCH_EVENTS BENCH_RUNS
# BENCH_LINES BENCH_GPU_LINES BENCH_HOLDERS BENCH_SECS BENCH_QUERIES
# BENCH_RESTART_EVENTS (the ledger sizes of the restart figure),
# BENCH_RESTART_OBJECTS (the live pods of watch's restart figure),
# BENCH_CLUSTER_SINGLES and BENCH_CLUSTER_EVENTS (the events the cluster
# figures feed per run in batches of 1 and of 100), BENCH_ONLY (one part:
# ledger, heavy or cluster), and MAKE, BUILD (the build directory the
# Makefile uses). The cluster figures need etcd (`make deps` installs it);
# BENCH_CLUSTER_PARTS picks some of them (feed admission failover),
# BENCH_CLUSTER_ADM_EVENTS sizes the admissions' simulated history,
# BENCH_KILL_BEFORE and BENCH_KILL_AFTER the seconds of load around a
# SIGKILL (3, 10), BENCH_MEMBER_OPTS the members' extra options,
# BENCH_CLUSTER_PIN=1 etcd on CPU 0 and the members on CPU 1. BENCH_QUICK=1
# runs everything once, shorter (below), for development.
set -eu

events=${BENCH_EVENTS:-1000000}
runs=${BENCH_RUNS:-3}
lines=${BENCH_LINES:-500000}
gpu_lines=${BENCH_GPU_LINES:-150000}
holders=${BENCH_HOLDERS:-1000000}
secs=${BENCH_SECS:-5}
queries=${BENCH_QUERIES:-20000}
MAKE=${MAKE:-make}
BUILD=${BUILD:-build/rel}
here=$(dirname "$0")
bin=./gpuledger
# BENCH_QUICK=1, for development: one run of BENCH_QUICK_SECS (3) seconds
# per wrk figure, small cluster feeds, a SIGKILL 2 s into 7 s of load. Its
# figures are not the benchmark's.
if [ -n "${BENCH_QUICK:-}" ]; then
	runs=1
	secs=${BENCH_QUICK_SECS:-3}
	BENCH_CLUSTER_SINGLES=100
	BENCH_CLUSTER_EVENTS=2000
	BENCH_KILL_BEFORE=${BENCH_KILL_BEFORE:-2}
	BENCH_KILL_AFTER=${BENCH_KILL_AFTER:-5}
fi
# The simulated month: `gpuledger simulate`'s default start and 30 days.
month_from=2026-01-01T00:00:00Z
month_to=2026-01-31T00:00:00Z

say() { printf '%s\n' "$*" >&2; }

# ---------------------------------------------------------------------------
# Packages

install_missing() {
	missing=""
	for p in libsqlite3-dev libpq-dev; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q "ok installed" || missing="$missing $p"
	done
	command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
	[ -x /usr/bin/time ] || missing="$missing time"
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 ||
		missing="$missing postgresql"
	[ -z "$missing" ] && return 0
	say "bench: installing:$missing"
	SUDO=
	[ "$(id -u)" -ne 0 ] && SUDO=sudo
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -q >&2
	# shellcheck disable=SC2086
	$SUDO apt-get install -y -q --no-install-recommends $missing >&2
}

# ---------------------------------------------------------------------------
# Results: one line per figure in $res,
#   group|label|median|min|max|unit|runs|target
# and the commands used in $cmds.

now() { date +%s.%N; }

# Reads one number a line; prints "median|min|max|count" (the upper median
# for an even count, as the C programs take it).
stats() {
	sort -g | awk '{ v[NR] = $1 }
		END { if (NR == 0) print "nan|nan|nan|0";
		      else printf "%s|%s|%s|%d\n", v[int(NR / 2) + 1], v[1], v[NR], NR }'
}

# figure GROUP LABEL UNIT TARGET < numbers
figure() {
	echo "$1|$2|$(stats)|$3|$4" | awk -F'|' -v OFS='|' \
		'{ print $1, $2, $3, $4, $5, $7, $6, $8 }' >>"$res"
}

cmd() { printf '  %s\n' "$*" >>"$cmds"; }

# A number printed by wrk ("12.34us", "1.2ms", "3s") in milliseconds.
wrk_ms() {
	awk -v x="$1" 'BEGIN {
		n = x + 0; u = x; sub(/^[0-9.]+/, "", u)
		if (u == "us") n /= 1000; else if (u == "s") n *= 1000
		else if (u == "m") n *= 60000
		printf "%.3f\n", n }'
}

# ---------------------------------------------------------------------------
# The measurements

bench_ledger() {
	say "== ledger: durable append, rebuild, cold start, inclusion proofs ($events events, $runs runs)"
	cmd "$BUILD/tests/bench_ledger $events $runs"
	"$BUILD/tests/bench_ledger" "$events" "$runs" >"$tmp/ledger.out"
	# "label   median unit  (min X, max Y, N runs)" -> a figure line.
	sed -n 's/^\(.*[^ ]\)  *\([0-9.][0-9.]*\) \([^ ]*\)  (min \([0-9.]*\), max \([0-9.]*\), \([0-9]*\) runs)$/|\1|\2|\4|\5|\3|\6|/p' \
		"$tmp/ledger.out" | awk -F'|' -v OFS='|' \
		-v g="Ledger (bench_ledger, $events generated events per run)" '
		{ $1 = g }
		$2 ~ /batch 10000$/ { $8 = ">= 1M events/s (Merkle tree maintained)" }
		/inclusion proof/ { $8 = "<= 50 us" }
		/rebuild/ { $8 = ">= 8M events/s" }
		{ print }' >>"$res"
	# The same work's physical limit in the same run (DESIGN 10): raw LMDB
	# puts of the same bytes, a raw scan with decode.
	grep '^RATIO|' "$tmp/ledger.out" | cut -d'|' -f2- >>"$tmp/limits"
}

# ingest NAME LINES TARGET [simulate options]: simulate a stream, then time
# `gpuledger watch --from` into a fresh ledger, runs times. The last ledger
# is kept as $tmp/NAME.db.
ingest() {
	name=$1 n=$2 target=$3
	shift 3
	say "== ingest: $n watch events, $name stream ($runs runs)"
	cmd "$bin simulate --seed 1 --events $n $* --out STREAM"
	cmd "$bin watch --from STREAM --db DIR   (timed end to end)"
	"$bin" simulate --seed 1 --events "$n" "$@" --out "$tmp/$name.ndjson"
	i=0
	while [ $i -lt "$runs" ]; do
		rm -rf "$tmp/$name.db"
		t0=$(now)
		"$bin" watch --from "$tmp/$name.ndjson" --db "$tmp/$name.db" \
			>"$tmp/$name.watch" 2>&1
		t1=$(now)
		awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", n / (b - a) }'
		i=$((i + 1))
	done | figure "Full stream ingest (gpuledger watch --from FILE, durable)" "$name: $n watch events" "watch events/s" "$target"
	say "   $(cat "$tmp/$name.watch")"
	rm -f "$tmp/$name.ndjson"
}

bench_export() {
	say "== export: one simulated month, --step day ($runs runs)"
	cmd "$bin export --db DIR --from $month_from --to $month_to --step day"
	i=0
	while [ $i -lt "$runs" ]; do
		t0=$(now)
		"$bin" export --db "$tmp/mix.db" --from "$month_from" \
			--to "$month_to" --step day >"$tmp/export.csv"
		t1=$(now)
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'
		i=$((i + 1))
	done >"$tmp/export.ms"
	rows=$(($(wc -l <"$tmp/export.csv") - 1))
	figure "Billing export of one simulated month" "export --step day, 30 days ($rows rows)" ms "" <"$tmp/export.ms"
}

# DESIGN 10's holds bullet: 100,000 alive holds (BENCH_HOLDS), durable
# verdicts in group commits of 100 judged one after another on a working
# state, holds on against off; bytes per alive hold; rebuild from genesis
# of the same log (10 pod observations between admissions) with holds
# against without.
bench_holds() {
	n=${BENCH_HOLDS:-100000}
	say "== holds: $n alive holds ($runs runs)"
	cmd "$BUILD/tests/bench_holds $n 2000 100 10"
	i=0
	while [ $i -lt "$runs" ]; do
		"$BUILD/tests/bench_holds" "$n" 2000 100 10
		i=$((i + 1))
	done >"$tmp/holds.out"
	hg="Holds: $n alive holds (DESIGN 3.7)"
	awk '$1 == "bytes_per_hold" { print $2 }' "$tmp/holds.out" |
		figure "$hg" "heap per alive hold" "bytes" "<= 200 bytes"
	awk '$1 == "verdicts_on" { on = $2 } $1 == "verdicts_off" { off = $2 }
	     $1 == "rebuild_off" { printf "%.3f\n", on / off }' "$tmp/holds.out" |
		figure "$hg" "durable verdicts, holds on / off" "x" ">= 0.9x"
	awk '$1 == "rebuild_on" { on = $2 } $1 == "rebuild_off" { off = $2 }
	     $1 == "rebuild_on" { printf "%.3f\n", on / off }' "$tmp/holds.out" |
		figure "$hg" "rebuild from genesis, holds on / off" "x" ">= 0.9x"
}

bench_holders() {
	say "== memory per holder: $holders holders, checkpoint, open ($runs runs)"
	cmd "$BUILD/tests/bench_holders build DIR $holders; $BUILD/tests/bench_holders open DIR"
	"$BUILD/tests/bench_holders" build "$tmp/holders" "$holders" >/dev/null
	mg="Memory per holder and cold start (a checkpoint of $holders holders)"
	i=0
	while [ $i -lt "$runs" ]; do
		"$BUILD/tests/bench_holders" open "$tmp/holders"
		i=$((i + 1))
	done >"$tmp/holders.out"
	awk '{ printf "%.1f\n", $4 / $2 }' "$tmp/holders.out" |
		figure "$mg" "RSS per holder after open (VmRSS delta / holders)" "bytes" "<= 300 bytes"
	awk '{ printf "%.1f\n", $6 / $2 }' "$tmp/holders.out" |
		figure "$mg" "  of which heap (RssAnon delta / holders)" "bytes" ""
	awk '{ print $8 }' "$tmp/holders.out" |
		figure "$mg" "cold start: ledger_open" "ms" "<= 1000 ms"
	rm -rf "$tmp/holders"
}

# ---------------------------------------------------------------------------
# PostgreSQL: Debian's server in a temporary directory, loopback and a unix
# socket only, stopped on exit. The settings are explained in base_pg.c.

pg_bin=
pg_dir=
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pg_start() {
	pg_bin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
	pg_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-bench-pg.XXXXXX")
	[ "$(id -u)" -eq 0 ] && chown postgres: "$pg_dir"
	port=$(free_port)
	as_pg "$pg_bin/initdb" -D "$pg_dir/data" -U bench --auth=trust \
		-E UTF8 --no-locale >"$tmp/initdb.log" 2>&1 || return 1
	cat >>"$pg_dir/data/postgresql.conf" <<-EOF
		listen_addresses = '127.0.0.1'
		port = $port
		unix_socket_directories = '$pg_dir'
		fsync = on
		synchronous_commit = on
		full_page_writes = on
		wal_level = minimal
		max_wal_senders = 0
		max_wal_size = 4GB
		checkpoint_timeout = 30min
		shared_buffers = 1GB
		work_mem = 64MB
		maintenance_work_mem = 256MB
	EOF
	as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w \
		-t 60 start >/dev/null || return 1
	pg_conn="host=$pg_dir port=$port user=bench dbname=postgres"
	cmd "$pg_bin/initdb -D DIR -U bench --auth=trust; settings of base_pg.c;"
	cmd "$pg_bin/pg_ctl -D DIR start   (127.0.0.1:$port, socket in DIR)"
}

pg_stop() {
	[ -n "$pg_dir" ] || return 0
	[ -f "$pg_dir/data/postmaster.pid" ] &&
		as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast -w -t 60 stop \
			>/dev/null 2>&1
	rm -rf "$pg_dir"
	pg_dir=
}

bench_compare() {
	say "== baselines: SQLite and PostgreSQL, same events and batch sizes"
	pg_conn=
	pg_start || say "bench: PostgreSQL did not start; see $tmp/initdb.log"
	mkdir -p "$tmp/cmp"
	set -- --tmp "$tmp/cmp" --events "$events" --runs "$runs" \
		--queries "$queries" --source "$tmp/mix.db"
	[ -n "$pg_conn" ] && set -- "$@" --pg "$pg_conn"
	cmd "$BUILD/tests/bench_compare $*"
	"$BUILD/tests/bench_compare" "$@" >"$tmp/compare.out"
	pg_stop
	grep '^INFO|' "$tmp/compare.out" | cut -d'|' -f2- >>"$tmp/info"
	# Grouped by figure, gpuledger first in each: "append.1000.sqlite" is
	# figure "append.1000" of store sqlite.
	grep '^RESULT|' "$tmp/compare.out" | awk -F'|' -v OFS='|' -v n="$events" '
		{ split($2, id, ".")
		  if (id[1] == "append") {
			g = "Same " n " events, durable append, batch " id[2]; o = id[2] }
		  else if (id[1] == "rebuild") {
			g = "Same events, rebuild of all per-namespace totals"; o = 1e9 }
		  else { g = "Remaining-budget query, in-process (no HTTP)"; o = 2e9 }
		  print o, g, $3, $4, $5, $6, $7, $8, "" }' |
		sort -t'|' -k1,1n -s | cut -d'|' -f2- >>"$res"
	grep '^RATIO|' "$tmp/compare.out" | cut -d'|' -f2- >"$tmp/ratios"
}

# ---------------------------------------------------------------------------
# gpuledger serve under wrk, against the ledger of the default-mix stream.

serve_pid=
scheme=http
# serve_start [SERVE-OPTIONS...]: with --tls-cert, $url is https.
serve_start() {
	"$bin" serve --db "${serve_db:-$tmp/mix.db}" --listen 127.0.0.1:0 "$@" \
		>"$tmp/serve.out" 2>"$tmp/serve.err" &
	serve_pid=$!
	port=
	i=0
	while [ -z "$port" ] && [ $i -lt 200 ]; do
		sleep 0.05
		port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/serve.out")
		i=$((i + 1))
	done
	[ -n "$port" ] || { say "bench: serve did not start"; return 1; }
	url=$scheme://127.0.0.1:$port
}

# stop_bg PID: stops a background server of ours (nothing when empty).
stop_bg() {
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

serve_stop() {
	stop_bg "$serve_pid"
	serve_pid=
}

# The CPU time (utime + stime, clock ticks) process $1 has used so far.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# wrk_runs GROUP LABEL CONNECTIONS RPS_TARGET P99_TARGET wrk-arguments...
# With cpu_pid set, also the requests the server at that pid answers per
# second of its own CPU time (user and system: the sockets' kernel work
# counts), since wrk -t1 on the other core may be what bounds the rate.
wrk_runs() {
	group=$1 label=$2 conns=$3 rps_target=$4 p99_target=$5
	shift 5
	i=0
	: >"$tmp/wrk.rps"
	: >"$tmp/wrk.p99"
	: >"$tmp/wrk.cpu"
	while [ $i -lt "$runs" ]; do
		[ -n "${cpu_pid:-}" ] && c0=$(cpu_ticks "$cpu_pid")
		wrk -t1 -c"$conns" -d"${secs}s" --latency "$@" >"$tmp/wrk.out"
		sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$tmp/wrk.out" >>"$tmp/wrk.rps"
		wrk_ms "$(awk '$1 == "99%" { print $2 }' "$tmp/wrk.out")" >>"$tmp/wrk.p99"
		[ -n "${cpu_pid:-}" ] &&
			awk -v t="$(($(cpu_ticks "$cpu_pid") - c0))" -v hz="$(getconf CLK_TCK)" '
				/^ *[0-9]+ requests in / { printf "%.1f\n", $1 / (t > 0 ? t / hz : 1e-9) }' \
				"$tmp/wrk.out" >>"$tmp/wrk.cpu"
		grep -q 'Non-2xx' "$tmp/wrk.out" &&
			say "   $label: $(grep 'Non-2xx' "$tmp/wrk.out")"
		i=$((i + 1))
	done
	figure "$group" "$label, $conns connections" "req/s" "$rps_target" <"$tmp/wrk.rps"
	figure "$group" "  p99 latency" "ms" "$p99_target" <"$tmp/wrk.p99"
	[ -s "$tmp/wrk.cpu" ] &&
		figure "$group" "  per CPU second of the server" "req/CPU-s" "" <"$tmp/wrk.cpu"
	return 0
}

# The deepest tenant with a bounded, unblocked class, so that both
# requests walk the longest ancestry: sets ns and cls, and exports them as
# BENCH_NS and BENCH_CLASS for wrk_admission.lua.
pick_tenant() {
	pick=$("$bin" replay --db "$tmp/mix.db" --json | python3 -c '
import json, sys
st = json.load(sys.stdin)
best = None
for t in st["tenants"]:
    for c, r in sorted(t["remaining"].items()):
        if r["remaining"] is not None and not r["blocked"]:
            d = t["namespace"].count("-")
            if best is None or d > best[0]:
                best = (d, t["namespace"], c)
print(best[1], best[2]) if best else print("tenant-root", "h100")')
	ns=${pick% *} cls=${pick#* }
	BENCH_NS=$ns BENCH_CLASS=$cls
	export BENCH_NS BENCH_CLASS
}

bench_serve() {
	pick_tenant
	say "== serve: GET remaining and POST admission for $ns/$cls, wrk ${secs}s ($runs runs)"
	serve_group="gpuledger serve over loopback (wrk -t1, ${secs}s runs), $ns"
	serve_start
	cmd "$bin serve --db DIR --listen 127.0.0.1:0"
	cmd "wrk -t1 -c64 (and -c8) -d${secs}s --latency $url/v1/tenants/$ns/remaining"
	cmd "BENCH_NS=$ns BENCH_CLASS=$cls wrk -t1 -c64 -d${secs}s --latency -s $here/wrk_admission.lua $url/v1/admission"
	# The size of the answer, for a baseline that sends as many bytes.
	curl -s -o /dev/null -w '%{size_download}\n' \
		"$url/v1/tenants/$ns/remaining" >"$tmp/remaining.bytes"
	cpu_pid=$serve_pid
	wrk_runs "$serve_group" "GET /v1/tenants/{ns}/remaining" 64 \
		">= 50k req/s" "" "$url/v1/tenants/$ns/remaining"
	# At 64 connections Little's law alone puts the mean latency near
	# 1 ms at 50k req/s; the latency target is read at 8.
	wrk_runs "$serve_group" "GET /v1/tenants/{ns}/remaining" 8 \
		"" "<= 1 ms" "$url/v1/tenants/$ns/remaining"
	cpu_pid=
	wrk_runs "$serve_group" "POST /v1/admission (durable verdicts)" 64 \
		">= 20k req/s" "" -s "$here/wrk_admission.lua" "$url/v1/admission"
	serve_stop
	bench_serve_tls
}

# The same over TLS (DESIGN 10: >= 50% of the plain rate), and the rate of
# full handshakes (a new connection per request: Connection: close).
bench_serve_tls() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -keyout "$tmp/tls.key" -out "$tmp/tls.crt" -days 2 \
		-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		2>/dev/null || { say "bench: no TLS certificate"; return 1; }
	say "== serve over TLS: the same requests, and full handshakes"
	tls_group="gpuledger serve over TLS 1.3 (wrk -t1, ${secs}s runs), $ns"
	scheme=https
	serve_start --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key"
	scheme=http
	cmd "$bin serve --db DIR --listen 127.0.0.1:0 --tls-cert tls.crt --tls-key tls.key"
	cmd "wrk -t1 -c64 -d${secs}s --latency $url/v1/tenants/$ns/remaining (and /v1/admission as above)"
	cmd "wrk -t1 -c8 -d${secs}s -H 'Connection: close' $url/healthz   # handshakes/s"
	wrk_runs "$tls_group" "GET /v1/tenants/{ns}/remaining" 64 \
		">= 50% of plain" "" "$url/v1/tenants/$ns/remaining"
	wrk_runs "$tls_group" "POST /v1/admission (durable verdicts)" 64 \
		">= 50% of plain" "" -s "$here/wrk_admission.lua" "$url/v1/admission"
	wrk_runs "$tls_group" "full TLS handshakes (GET /healthz, Connection: close)" 8 \
		"" "" -H "Connection: close" "$url/healthz"
	serve_stop
}

# ---------------------------------------------------------------------------
# Restart and heavy reads (DESIGN 10: restart in O(live objects); heavy
# reads never stall the loop).

restart_events=${BENCH_RESTART_EVENTS:-1000000 10000000}

# serve's start (query_server_open: the ledger's checkpoint and tail, the
# verdict index) on ledgers of each size: the figure must not grow.
# The reconciliation audit (DESIGN 3.6) over the restart ledger of n
# events: its two passes from genesis, their rate and the peak of the
# process's own memory (RssAnon, sampled every 50 ms: the ledger's mapped
# pages are the page cache's, not the process's), which must not grow with
# the length of the history nor with the findings (the ledger sizes differ
# 10x, and so do their overshoots).
peak_anon() { # peak_anon OUT CMD...: runs CMD > OUT; prints its peak RssAnon in kB
	out=$1
	shift
	"$@" >"$out" 2>/dev/null &
	pid=$!
	peak=0
	while kill -0 "$pid" 2>/dev/null; do
		a=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
		[ -n "$a" ] && [ "$a" -gt "$peak" ] && peak=$a
		sleep 0.05
	done
	wait "$pid" || true
	echo "$peak"
}

bench_reconcile() {
	say "== reconcile: two passes over a ledger of $1 events ($runs runs)"
	cmd "gpuledger reconcile --db DIR >OUT, peak RssAnon sampled   (on the restart ledger of $1 events)"
	i=0
	while [ $i -lt "$runs" ]; do
		t0=$(now)
		k=$(peak_anon "$tmp/reconcile.json" "$bin" reconcile --db "$tmp/restart.db")
		t1=$(now)
		f=$(sed -n 's/.*"overshoots":\([0-9]*\),"preExisting".*/\1/p' "$tmp/reconcile.json")
		awk -v n="$1" -v a="$t0" -v b="$t1" -v k="$k" -v f="${f:-0}" \
			'BEGIN { printf "%.1f %.1f %d\n", n / (b - a), k / 1024, f }'
		i=$((i + 1))
	done >"$tmp/reconcile.out"
	rm -f "$tmp/reconcile.json"
	cg="Reconciliation audit (gpuledger reconcile), the restart ledgers"
	awk '{ print $1 }' "$tmp/reconcile.out" |
		figure "$cg" "$1 events: rate" "events/s" ""
	awk '{ print $2 }' "$tmp/reconcile.out" |
		figure "$cg" "  peak RssAnon ($(awk 'NR == 1 { print $3 }' "$tmp/reconcile.out") overshoots)" MB "bounded: flat in N"
}

bench_restart() {
	for n in $restart_events; do
		say "== restart: serve on a ledger of $n events ($runs runs)"
		cmd "$BUILD/tests/bench_serve build DIR $n; $BUILD/tests/bench_serve open DIR"
		"$BUILD/tests/bench_serve" build "$tmp/restart.db" "$n"
		i=0
		while [ $i -lt "$runs" ]; do
			"$BUILD/tests/bench_serve" open "$tmp/restart.db"
			i=$((i + 1))
		done >"$tmp/restart.out"
		rg="Restart of serve (query_server_open), generated events + 1% verdicts"
		awk '{ print $2 }' "$tmp/restart.out" |
			figure "$rg" "$n events: ready" ms "<= 2000 ms, flat in N"
		awk '{ print $4 }' "$tmp/restart.out" |
			figure "$rg" "  event records read at start" records ""
		bench_reconcile "$n"
		rm -rf "$tmp/restart.db"
	done
}

# watch --from's start (DESIGN 10: restart in O(live objects), the watcher's
# half): on each ledger size of generated history, the same
# BENCH_RESTART_OBJECTS live GPU pods are read from a stream; the figure is
# `watch --from` of that stream again with nothing new (the ledger's
# checkpoint and tail, the object table, the file's fingerprint), process
# start to exit.
restart_objects=${BENCH_RESTART_OBJECTS:-1000000}

bench_watch_restart() {
	wclasses=$here/../ingest/classes.json
	awk -v n="$restart_objects" 'BEGIN {
		for (i = 0; i < n; i++)
			printf "{\"type\":\"ADDED\",\"time\":\"2026-01-01T00:%02d:%02dZ\"," \
				"\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\"," \
				"\"metadata\":{\"namespace\":\"tenant-bench-%d\",\"name\":\"p%d\"," \
				"\"uid\":\"u%d\"},\"spec\":{\"nodeName\":\"n%d\",\"containers\":" \
				"[{\"name\":\"c\",\"resources\":{\"limits\":" \
				"{\"nvidia.com/GH100_H100_SXM5_80GB\":\"1\"}}}]}," \
				"\"status\":{\"phase\":\"Running\"}}}\n",
				int(i / 60000) % 60, int(i / 1000) % 60, i % 100, i, i, i % 1000
	}' >"$tmp/wrestart.ndjson"
	for n in $restart_events; do
		say "== restart: watch --from on a ledger of $n events + $restart_objects live pods ($runs runs)"
		cmd "$BUILD/tests/bench_serve build DIR $n; gpuledger watch --db DIR --from PODS.ndjson --classes tests/ingest/classes.json (twice; the second is timed, --verbose prints when it was ready)"
		"$BUILD/tests/bench_serve" build "$tmp/wrestart.db" "$n"
		"$bin" watch --db "$tmp/wrestart.db" --from "$tmp/wrestart.ndjson" \
			--classes "$wclasses" --no-sync >/dev/null
		i=0
		while [ $i -lt "$runs" ]; do
			t0=$(now)
			"$bin" watch --db "$tmp/wrestart.db" --from "$tmp/wrestart.ndjson" \
				--classes "$wclasses" --no-sync --verbose \
				>"$tmp/wrestart.one" 2>"$tmp/wrestart.err"
			t1=$(now)
			sed -n 's/^watch: ready in \([0-9.]*\) ms.*/\1 /p' "$tmp/wrestart.err" | tr -d '\n'
			awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f ", (b - a) * 1000 }'
			sed -n 's/.*start read \([0-9]*\) records.*/\1/p' "$tmp/wrestart.one"
			i=$((i + 1))
		done >"$tmp/wrestart.out"
		rg="Restart of watch --from (nothing new), generated events + live GPU pods"
		awk '{ print $1 }' "$tmp/wrestart.out" |
			figure "$rg" "$n events + $restart_objects pods: ready (watch --verbose)" ms "<= 2000 ms, flat in N"
		awk '{ print $2 }' "$tmp/wrestart.out" |
			figure "$rg" "  whole run, exit included (frees the cache)" ms ""
		awk '{ print $3 }' "$tmp/wrestart.out" |
			figure "$rg" "  records read at start (table + checkpoint + tail)" records ""
		rm -rf "$tmp/wrestart.db"
	done
	rm -f "$tmp/wrestart.ndjson"
}

base_pid=
base_stop() {
	stop_bg "$base_pid"
	base_pid=
}

# The loop's cost alone: a minimal libuv HTTP server, in the same run,
# answering a body of the size of GET remaining's (the same headers'
# size too), keep-alive, to the same wrk.
bench_baseline() {
	body=$(cat "$tmp/remaining.bytes" 2>/dev/null || echo 16)
	say "== baseline: a minimal libuv HTTP server, $body-byte answers, wrk ${secs}s ($runs runs)"
	"$BUILD/tests/bench_serve" baseline "$body" >"$tmp/base.out" &
	base_pid=$!
	bport=
	i=0
	while [ -z "$bport" ] && [ $i -lt 200 ]; do
		sleep 0.05
		bport=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/base.out")
		i=$((i + 1))
	done
	cmd "$BUILD/tests/bench_serve baseline $body; wrk -t1 -c64 (and -c8) -d${secs}s --latency http://127.0.0.1:PORT/"
	cpu_pid=$base_pid
	for c in 64 8; do
		wrk_runs "Minimal libuv HTTP server (tests/bench/bench_serve.c baseline)" \
			"GET / (fixed $body-byte answer)" $c "" "" "http://127.0.0.1:$bport/"
	done
	cpu_pid=
	base_stop
	# GET remaining as a share of it (medians), by rate and by the
	# server's CPU time per request. wrk -t1 takes the other core and
	# bounds both rates near 220k/s, so the rates say little: at 8
	# connections the baseline, answering each request the moment it
	# comes, sleeps and is woken per request and gets the lower rate. The
	# CPU a request costs the server is what the two servers do.
	awk -F'|' '
		/^gpuledger serve over loopback/ && /remaining, [0-9]+ connections/ {
			split($2, w, ", "); c = w[2]; r[c] = $3; last = "r" c; next }
		/^Minimal libuv/ && /answer\), [0-9]+ connections/ {
			split($2, w, ", "); c = w[2]; b[c] = $3; last = "b" c; next }
		/per CPU second of the server/ {
			if (substr(last, 1, 1) == "r") rc[substr(last, 2)] = $3
			else if (substr(last, 1, 1) == "b") bc[substr(last, 2)] = $3 }
		$2 !~ /^  / { last = "" }
		END {
			n = split("64 connections|8 connections", cs, "|")
			for (i = 1; i <= n; i++) {
				c = cs[i]
				if (rc[c] && bc[c])
					printf "GET remaining / minimal libuv server, per server CPU second, %s%s|%.1f%%\n", c, i == 1 ? " (>= 90%)" : "", 100 * rc[c] / bc[c]
				if (r[c] && b[c])
					printf "GET remaining / minimal libuv server, rate (wrk-bound), %s|%.1f%%\n", c, 100 * r[c] / b[c]
			}
		}' "$res" >>"$tmp/ratios"
}

# Background load of our own, so that the isolation ratio is also read on
# a machine whose cores are taken (DESIGN 10: ratios hold where absolute
# figures cannot): spin_start N starts N busy shells at the loop's
# priority, spin_stop ends them. Each in a session of its own, as another
# process on the node is: the scheduler shares a core between sessions
# (autogroups; between pods, cgroups) before it shares it between the
# threads of one, so spinners in serve's own session would compete inside
# serve's share instead of with it.
spins=
spin_start() {
	for k in $(seq "$1"); do
		if command -v setsid >/dev/null 2>&1; then
			setsid sh -c 'while :; do :; done' &
		else
			sh -c 'while :; do :; done' &
		fi
		spins="$spins $!"
	done
}
spin_stop() {
	# shellcheck disable=SC2086
	[ -n "$spins" ] && { kill $spins 2>/dev/null || true; wait $spins 2>/dev/null || true; }
	spins=
}

# 8 clients, each exporting the month in a loop; exports_stop ends them,
# the curl in flight too, so that no export outlives its measurement. The
# clients run in a session of their own, as clients do on other machines
# or in other pods: in serve's session they would take serve's own share
# of the loop's core (receiving ~50 MB/s), which no deployment has.
loops=
exports_start() {
	setsid=
	command -v setsid >/dev/null 2>&1 && setsid=setsid
	for k in 1 2 3 4 5 6 7 8; do
		$setsid sh -c 'c=; trap "kill \$c 2>/dev/null; exit 0" TERM
			while :; do
				curl -s -o /dev/null "$1" &
				c=$!
				wait $c || sleep 0.1
			done' sh "$exp" &
		loops="$loops $!"
	done
}
exports_stop() {
	# shellcheck disable=SC2086
	[ -n "$loops" ] && { kill $loops 2>/dev/null || true; wait $loops 2>/dev/null || true; }
	loops=
}

# wrk_one NAME CONNECTIONS wrk-arguments...: one wrk run, its rate and p99
# appended to $tmp/NAME.rps and $tmp/NAME.p99; prints the p99.
wrk_one() {
	name=$1 conns=$2
	shift 2
	wrk -t1 -c"$conns" -d"${secs}s" --latency "$@" >"$tmp/wrk.out"
	sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$tmp/wrk.out" >>"$tmp/$name.rps"
	wrk_ms "$(awk '$1 == "99%" { print $2 }' "$tmp/wrk.out")" | tee -a "$tmp/$name.p99"
	if grep -q 'Non-2xx' "$tmp/wrk.out"; then
		say "   $name: $(grep 'Non-2xx' "$tmp/wrk.out")"
	fi
}

# heavy_case CASE SPINNERS: admission p99 without exports and with 8
# exports running, runs times, the two back to back in each run (the
# machine drifts; pairs see the same drift), with SPINNERS busy processes
# of our own throughout. The isolation ratio is the median p99 with
# exports over the median p99 without (DESIGN 7 and 10; issue 28: <= 3).
heavy_case() {
	case=$1 nspin=$2
	: >"$tmp/no.rps"
	: >"$tmp/no.p99"
	: >"$tmp/with.rps"
	: >"$tmp/with.p99"
	: >"$tmp/pairs"
	spin_start "$nspin"
	run=0 # not i: wrk_runs counts with i
	while [ $run -lt "$runs" ]; do
		a=$(wrk_one no 8 -s "$here/wrk_admission.lua" "$url/v1/admission")
		exports_start
		sleep 1
		b=$(wrk_one with 8 -s "$here/wrk_admission.lua" "$url/v1/admission")
		if [ "$case" = quiet ] && [ $run -eq 0 ]; then
			wrk_runs "$hg" "GET /healthz, 8 exports running" 1 "" "<= 5 ms" \
				"$url/healthz"
		fi
		exports_stop
		say "   $case, run $((run + 1)): admission p99 $a ms without exports, $b ms with 8"
		echo "$a $b" >>"$tmp/pairs"
		run=$((run + 1))
	done
	spin_stop
	figure "$hg" "POST /v1/admission, $case: no exports" req/s "" <"$tmp/no.rps"
	figure "$hg" "  p99 latency" ms "" <"$tmp/no.p99"
	figure "$hg" "POST /v1/admission, $case: 8 exports running" req/s "" <"$tmp/with.rps"
	figure "$hg" "  p99 latency" ms "$([ "$case" = quiet ] && echo '<= 5 ms')" <"$tmp/with.p99"
	awk -v c="$case" -v a="$(stats <"$tmp/no.p99" | cut -d'|' -f1)" \
		-v b="$(stats <"$tmp/with.p99" | cut -d'|' -f1)" 'BEGIN {
		r = a > 0 ? b / a : 0
		printf "%s: %.2f (%.3g / %.3g ms)|%s\n", c, r, b, a, r <= 3 ? "<= 3 met" : "<= 3 NOT met" }' >>"$tmp/isolation"
	# The same pair against the limit beside it: admission with no
	# exports in the same run (the disk's fsync alone).
	awk -F'|' -v c="$case" -v a="$(stats <"$tmp/no.p99" | cut -d'|' -f1)" \
		-v b="$(stats <"$tmp/with.p99" | cut -d'|' -f1)" \
		-v p="$(awk '{ printf "%.2f\n", ($1 > 0 ? $2 / $1 : 0) }' "$tmp/pairs" | stats)" 'BEGIN {
		split(p, q, "|")
		r = a > 0 ? b / a : 0
		printf "admission p99, 8 exports / none, %s|%.2f (%.3g / %.3g ms; runs'"'"' pairs %s, %s-%s)\n", c, r, b, a, q[1], q[2], q[3] }' >>"$tmp/limits"
	awk '{ printf "%.2f\n", ($1 > 0 ? $2 / $1 : 0) }' "$tmp/pairs" | stats |
		awk -F'|' -v c="$case" '{ printf "  %s, the ratio of each run'"'"'s pair: median %s (%s-%s)|\n", c, $1, $2, $3 }' >>"$tmp/isolation"
}

# Admission and /healthz latency while 8 clients export a month each, on a
# quiet machine and with two busy processes, and serve's RSS with 40 export
# clients reading 1 KB/s.
bench_heavy() {
	say "== heavy reads: admission p99 with and without 8 exports (quiet; 2 spinners); /healthz p99; RSS with 40 slow exporters"
	hg="gpuledger serve with heavy reads in flight (wrk -t1, ${secs}s runs)"
	# A copy of the ledger as ingest left it: the verdicts bench_serve
	# wrote would otherwise be read by every export (they lie in the
	# month) and the figures would depend on what ran before.
	serve_db=$tmp/heavy.db
	serve_start --max-heavy 64
	serve_db=
	exp="$url/v1/export?from=$month_from&to=$month_to&step=hour&format=json"
	# Without exports, what the disk's fsync alone costs an admission
	# (every one waits for its verdict's commit); the exports' share of the
	# latency is the ratio beside it.
	cmd "per run: wrk -c8 POST /v1/admission; then the same while 8 x (curl $exp in a loop); quiet, then with 2 x sh -c 'while :; do :; done'"
	cmd "wrk -c1 GET /healthz while 8 x (curl $exp in a loop), quiet"
	heavy_case quiet 0
	[ "${BENCH_HEAVY_CASES:-quiet spinners}" = quiet ] || heavy_case "2 spinners" 2
	[ -n "${BENCH_HEAVY_NO_RSS:-}" ] && { serve_stop; return 0; }
	cmd "40 x curl --limit-rate 1k $exp; VmRSS of serve after 10 s"
	i=0
	while [ $i -lt "$runs" ]; do
		slow=
		for k in $(seq 40); do
			curl -s --limit-rate 1k -o /dev/null "$exp" &
			slow="$slow $!"
		done
		sleep 10
		awk '/^(VmRSS|RssAnon|RssFile)/ { printf "%.1f ", $2 / 1024 }
			END { print "" }' "/proc/$serve_pid/status"
		# shellcheck disable=SC2086
		kill $slow 2>/dev/null || true
		# shellcheck disable=SC2086
		wait $slow 2>/dev/null || true
		i=$((i + 1))
	done >"$tmp/rss.out"
	# VmRSS, then RssAnon and RssFile, in the order /proc prints them.
	awk '{ print $1 }' "$tmp/rss.out" |
		figure "$hg" "serve RSS, 40 export clients reading 1 KB/s" MB "<= 256 MB"
	awk '{ print $2 }' "$tmp/rss.out" |
		figure "$hg" "  of which heap (RssAnon)" MB ""
	awk '{ print $3 }' "$tmp/rss.out" |
		figure "$hg" "  of which the ledger's map read (RssFile)" MB ""
	serve_stop
	rm -rf "$tmp/heavy.db"
}

# ---------------------------------------------------------------------------
# A cluster (DESIGN 10's cluster bullet, DESIGN 11): a real 3-member etcd on
# loopback (tests/cluster/etcd_cluster.py, the tests' harness; its data on
# $TMPDIR's disk, so that etcd's fsyncs are real), `gpuledger cluster init`
# and 3 `gpuledger member` processes; appends through the append txn by
# `gpuledger cluster feed` (the writer of observations for tests), measured
# by tests/bench/cluster_feed.py.

cl_hpid=
cl_pids=
cluster_stop() {
	for p in $cl_pids; do stop_bg "$p"; done
	cl_pids=
	stop_bg "$cl_hpid"
	cl_hpid=
	stop_bg "${cla_srv:-}"
	cla_srv=
}

# cl_member NAME ETCD-URLS: starts a member on $tmp/cl/NAME; sets
# cl_port and cl_pid.
cl_member() {
	"$bin" member --db "$tmp/cl/$1" --etcd "$2" --prefix /bench --name "$1" \
		--listen 127.0.0.1:0 >"$tmp/cl/$1.out" 2>"$tmp/cl/$1.err" &
	cl_pid=$!
	cl_pids="$cl_pids $cl_pid"
	cl_port=
	i=0
	while [ -z "$cl_port" ] && [ $i -lt 200 ]; do
		sleep 0.05
		cl_port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/cl/$1.out")
		i=$((i + 1))
	done
	[ -n "$cl_port" ] || { say "bench: member $1 did not start: $(tail -3 "$tmp/cl/$1.err")"; return 1; }
}

# cl_feed FILE BATCH [cluster_feed.py options]: one measured feed, its
# JSON line appended to $tmp/cl/feed.BATCH.
cl_feed() {
	f=$1 b=$2
	shift 2
	python3 "$here/cluster_feed.py" --bin "$bin" --etcd "$ETCD_URLS" \
		--prefix /bench --from "$f" --batch "$b" --members "$cl_urls" "$@" \
		>>"$tmp/cl/feed.$b" || say "   feed of $f: $(tail -1 "$tmp/cl/feed.$b")"
}

# cl_col FILE KEY: the numbers of KEY in FILE's JSON lines, one a line.
cl_col() {
	python3 -c 'import json, sys
for l in open(sys.argv[1]):
    v = json.loads(l).get(sys.argv[2])
    if isinstance(v, (int, float)):
        print(v)' "$1" "$2"
}

# bench_cluster: the etcd, then the parts named in BENCH_CLUSTER_PARTS
# (default all three): feed (appends through etcd, and a member's SIGKILL
# under them), admission (admissions against etcd's own puts, issue 40) and
# failover (the watcher's, tests/leader_cli.sh, its own etcd).
bench_cluster() {
	parts=${BENCH_CLUSTER_PARTS:-feed admission failover}
	if ! command -v etcd >/dev/null 2>&1; then
		say "bench: no etcd (tools/install-deps.sh installs etcd-server): no cluster figures"
		return 0
	fi
	cg="A cluster: 3 members, a 3-member etcd on loopback (cluster feed, one txn outstanding)"
	case " $parts " in *" feed "* | *" admission "*)
		if cluster_up; then
			case " $parts " in *" feed "*) bench_cluster_feed ;; esac
			case " $parts " in *" admission "*) bench_cluster_admission ;; esac
		fi
		cluster_stop
		rm -rf "$tmp/cl"
		;;
	esac
	case " $parts " in *" failover "*) bench_cluster_failover ;; esac
}

# cluster_up: a 3-member etcd on $tmp/cl/etcd (its data on $TMPDIR's
# disk); sources its env (ETCD_URLS, ETCD_URL0..2).
cluster_up() {
	mkdir -p "$tmp/cl"
	$pin_etcd python3 "$here/../cluster/etcd_cluster.py" up "$tmp/cl/etcd" --watch-pid $$ \
		>"$tmp/cl/harness.log" 2>&1 &
	cl_hpid=$!
	i=0
	while [ ! -f "$tmp/cl/etcd/ready" ] && [ $i -lt 600 ] && kill -0 "$cl_hpid" 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -f "$tmp/cl/etcd/ready" ] || {
		say "bench: etcd did not start: $(tail -3 "$tmp/cl/harness.log")"
		return 1
	}
	. "$tmp/cl/etcd/env"
	cmd "python3 tests/cluster/etcd_cluster.py up DIR   (3 x etcd $(etcd --version 2>/dev/null | sed -n 's/^etcd Version: //p'), data on ${TMPDIR:-/tmp} ($(df -P "$tmp" | awk 'NR == 2 { print $1 }')))"
}

bench_cluster_feed() {
	singles=${BENCH_CLUSTER_SINGLES:-300}
	batched=${BENCH_CLUSTER_EVENTS:-20000}
	say "== cluster: 3 members on a 3-member etcd (loopback), cluster feed of $singles events in batches of 1 and $batched in batches of 100 ($runs runs); SIGKILL of a member"
	# The events: a simulated history of GPU pods as `gpuledger log`
	# prints them (seqs are the log's), fed in consecutive chunks.
	need=$((runs * (singles + batched) + singles))
	"$bin" simulate --seed 26 --events $((need + need / 4 + 1000)) --all-gpu-pods \
		--tenants 10 --days 3 --out "$tmp/cl/sim.ndjson"
	"$bin" watch --from "$tmp/cl/sim.ndjson" --db "$tmp/cl/src" >/dev/null 2>&1
	"$bin" log --db "$tmp/cl/src" >"$tmp/cl/events"
	rm -f "$tmp/cl/sim.ndjson"
	have=$(wc -l <"$tmp/cl/events")
	[ "$have" -ge "$need" ] || {
		say "bench: only $have events for the cluster ($need wanted)"
		return 0
	}
	"$bin" cluster init --etcd "$ETCD_URLS" --prefix /bench >/dev/null ||
		{ cluster_stop_members; return 0; }
	# Each member starts on a different etcd member (the first URL).
	cl_member m1 "$ETCD_URL0,$ETCD_URL1,$ETCD_URL2" || { cluster_stop_members; return 0; }
	pid1=$cl_pid url1=http://127.0.0.1:$cl_port
	cl_member m2 "$ETCD_URL1,$ETCD_URL2,$ETCD_URL0" || { cluster_stop_members; return 0; }
	url2=http://127.0.0.1:$cl_port
	cl_member m3 "$ETCD_URL2,$ETCD_URL0,$ETCD_URL1" || { cluster_stop_members; return 0; }
	url3=http://127.0.0.1:$cl_port
	cl_urls=$url1,$url2,$url3
	cmd "$bin cluster init --etcd URLS --prefix /bench; 3 x $bin member --db DIR --etcd URLS --prefix /bench --name mN --listen 127.0.0.1:0"
	cmd "python3 $here/cluster_feed.py --bin $bin --etcd URLS --prefix /bench --from CHUNK --batch 1|100 --members M1,M2,M3   (wraps $bin cluster feed; polls each member's /readyz every 5 ms)"
	s=1
	: >"$tmp/cl/feed.1"
	: >"$tmp/cl/feed.100"
	run=0
	while [ $run -lt "$runs" ]; do
		sed -n "${s},$((s + singles - 1))p" "$tmp/cl/events" >"$tmp/cl/chunk"
		cl_feed "$tmp/cl/chunk" 1
		s=$((s + singles))
		sed -n "${s},$((s + batched - 1))p" "$tmp/cl/events" >"$tmp/cl/chunk"
		cl_feed "$tmp/cl/chunk" 100
		s=$((s + batched))
		run=$((run + 1))
	done
	echo "cluster: a member's server reads its own ledger every 50 ms (serve's follow timer), so the apply lag seen on /readyz includes up to 50 ms of it" >>"$tmp/info"
	for b in 1 100; do
		cl_col "$tmp/cl/feed.$b" events_per_s |
			figure "$cg" "appends through etcd, batches of $b" "events/s" ""
		cl_col "$tmp/cl/feed.$b" txns_per_s | figure "$cg" "  txns" "txns/s" ""
		cl_col "$tmp/cl/feed.$b" txn_p50_ms | figure "$cg" "  txn latency p50" ms ""
		cl_col "$tmp/cl/feed.$b" txn_p99_ms | figure "$cg" "  txn latency p99" ms ""
		cl_col "$tmp/cl/feed.$b" lag_p50_ms |
			figure "$cg" "  apply lag, commit to seen on all 3 (/readyz), p50" ms ""
		cl_col "$tmp/cl/feed.$b" lag_p99_ms | figure "$cg" "  apply lag p99" ms ""
		cl_col "$tmp/cl/feed.$b" poll_ms |
			figure "$cg" "  a member's /readyz polled every (the lag's resolution)" ms ""
	done
	# SIGKILL of m1 under the feed, probed by admissions (POST
	# /v1/admission with one fixed body) when a member answers them.
	pick=$("$bin" replay --db "$tmp/cl/src" --json | python3 -c '
import json, sys
st = json.load(sys.stdin)
for t in st["tenants"]:
    for c, r in sorted(t["remaining"].items()):
        if r["remaining"] is not None and not r["blocked"]:
            print(t["namespace"], c); sys.exit(0)
print("tenant-root h100")')
	printf '{"namespace":"%s","kind":"VMInstance","name":"vm-bench","old":null,"new":{"gpus":[{"class":"%s"}]}}' \
		"${pick% *}" "${pick#* }" >"$tmp/cl/admission.json"
	code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
		--data-binary @"$tmp/cl/admission.json" "$url2/v1/admission" || true)
	adm=
	[ "$code" = 200 ] && adm="--admission $tmp/cl/admission.json"
	# SIGKILL of m1 one second into a feed of batches of 1 (a txn, and an
	# apply on every member, every few ms): how long the other two refused
	# (admission when a member answers it, else readiness for it).
	sed -n "${s},$((s + singles - 1))p" "$tmp/cl/events" >"$tmp/cl/chunk"
	# Without admission the probe is a read of the state (GET /v1/tenants):
	# /readyz also says whether the log holds a complete list of the cluster
	# (NOTE Synced), which a feed of part of a history need not.
	[ -n "$adm" ] || adm="--probe /v1/tenants"
	cmd "the same feed (batches of 1) with kill -9 of member m1 after 1 s; the others probed every 5 ms ($(case $adm in --admission*) echo 'POST /v1/admission' ;; *) echo 'GET /v1/tenants: admission is not built yet' ;; esac))"
	: >"$tmp/cl/feed.kill"
	# shellcheck disable=SC2086
	python3 "$here/cluster_feed.py" --bin "$bin" --etcd "$ETCD_URLS" \
		--prefix /bench --from "$tmp/cl/chunk" --batch 1 --members "$cl_urls" \
		--kill-pid "$pid1" --kill-member "$url1" --kill-after 1 $adm \
		>"$tmp/cl/kill" || say "   feed with the kill: $(cat "$tmp/cl/kill")"
	probe=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("probe", "?"))' "$tmp/cl/kill" 2>/dev/null)
	cl_col "$tmp/cl/kill" refused_max_ms |
		figure "$cg" "SIGKILL of m1 under load: m2, m3 refused ($probe)" ms "0 (<= 1000 ms)"
	cl_col "$tmp/cl/kill" refused_before_max_ms |
		figure "$cg" "  the same in the second before the kill (the load alone)" ms ""
	cl_col "$tmp/cl/kill" lag_p99_ms | figure "$cg" "  apply lag p99 of m2, m3 meanwhile" ms ""
	python3 -c 'import json, sys
for w in json.load(open(sys.argv[1])).get("refused_why", []):
    print("cluster, after the kill: refused: " + w.replace("|", "/"))' "$tmp/cl/kill" >>"$tmp/info" 2>/dev/null || true
	cluster_stop_members
}

# The feed's members alone (the etcd stays for the next part).
cluster_stop_members() {
	for p in $cl_pids; do stop_bg "$p"; done
	cl_pids=
}

bench_cluster_failover() {
	# The watcher's failover (DESIGN 10: resumed within TTL + 2 s): the
	# leader test's 3 members --watch on a 3-member etcd and the test API
	# server, at the default lease of 5 s, the leader SIGKILLed; the time
	# until another member says it watches as leader.
	cmd "LEADER_TTL=5 sh tests/leader_cli.sh (3 members --watch, the test API server): kill -9 of the leader until another member watches"
	: >"$tmp/leader.gap"
	run=1
	while [ $run -le "$runs" ]; do
		LEADER_TTL=5 sh "$here/../leader_cli.sh" "$bin" >"$tmp/leader.out" 2>&1 ||
			say "   leader_cli run $run: $(tail -2 "$tmp/leader.out")"
		sed -n 's/.* leads \([0-9]*\) ms after SIGKILL.*/\1/p' "$tmp/leader.out" | head -1 >>"$tmp/leader.gap"
		run=$((run + 1))
	done
	figure "$cg" "SIGKILL of the leader: the watcher resumed on another member (lease 5 s)" ms "<= 7,000 (TTL + 2 s)" <"$tmp/leader.gap"
}


# ---------------------------------------------------------------------------
# Admissions in a cluster against etcd itself (DESIGN 10's cluster bullet,
# issue 40), on the same 3-member etcd: 3 `gpuledger member --watch` (so
# that one holds P/leader: today's members, and the verdict sequencer once
# it exists) on a fresh prefix, whose leader's watcher lists the state of
# the feed's simulated history from the test API server
# (tests/apiserver/fake_apiserver.py serving the objects alive at its end).
# The load is wrk with tests/bench/wrk_log.lua, one connection per thread
# (each answer paired with its request and logged), one wrk per target
# started together: members over HTTP only (POST /v1/admission,
# AdmissionReviews with unique uids) and etcd only through its JSON
# gateway; tests/bench/cluster_admit.py pools the logs. Per run, back to
# back: etcd's blind puts at 1, 8 and 64 connections; admissions spread
# over the 3 members as a Service spreads them (3/3/2, 22/21/21); the same
# load on the member holding P/leader alone; then the SIGKILL of that
# member and of a door under the spread load of 8 connections.

cla_P=/bench-adm
cla_srv=
kill_before=${BENCH_KILL_BEFORE:-3}
kill_after=${BENCH_KILL_AFTER:-10}
# As tests/cluster/lib.sh starts members. In BENCH_MEMBER_OPTS the text
# @PEER_TOKEN_FILE@ is a file of one token (mode 600) the bench writes, for
# members whose doors need peer credentials to forward (DESIGN 11).
cla_opts=${BENCH_MEMBER_OPTS:---etcd-timeout-ms 1500}
# BENCH_CLUSTER_PIN=1: etcd on CPU 0, the members and wrk on CPU 1 (a
# stand-in, on 2 cores, for etcd on nodes of its own: each figure then
# says what its side costs without taking the other's core).
pin_etcd= pin_rest=
if [ -n "${BENCH_CLUSTER_PIN:-}" ] && command -v taskset >/dev/null; then
	pin_etcd="taskset -c 0" pin_rest="taskset -c 1"
fi

# cla_etcd NAME: the member's --etcd, its own etcd member first (as the
# feed's members: the spread puts go to the same three).
cla_etcd() {
	case $1 in
	m1) echo "$ETCD_URL0,$ETCD_URL1,$ETCD_URL2" ;;
	m2) echo "$ETCD_URL1,$ETCD_URL2,$ETCD_URL0" ;;
	*) echo "$ETCD_URL2,$ETCD_URL0,$ETCD_URL1" ;;
	esac
}

# cla_member NAME: starts member NAME on $tmp/cla/NAME; sets cla_pid_NAME
# and cla_url_NAME. Restarted after a SIGKILL it may find its name still
# held by the dead process's lease (refused until that expires): it is
# started again, for up to 20 s.
cla_member() {
	k=0
	while [ $k -lt 40 ]; do
		rm -f "$tmp/cla/$1.out"
		# shellcheck disable=SC2086
		$pin_rest "$bin" member --db "$tmp/cla/$1" --etcd "$(cla_etcd "$1")" \
			--prefix "$cla_P" --name "$1" --listen 127.0.0.1:0 $cla_opts \
			--watch --kubeconfig "$tmp/cla/kubeconfig" \
			>"$tmp/cla/$1.out" 2>>"$tmp/cla/$1.err" &
		p=$!
		port=
		i=0
		while [ -z "$port" ] && [ $i -lt 100 ] && kill -0 "$p" 2>/dev/null; do
			sleep 0.05
			port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/cla/$1.out")
			i=$((i + 1))
		done
		if [ -n "$port" ]; then
			cl_pids="$cl_pids $p"
			eval "cla_pid_$1=$p cla_url_$1=http://127.0.0.1:$port"
			return 0
		fi
		stop_bg "$p"
		sleep 0.5
		k=$((k + 1))
	done
	say "bench: member $1 did not start: $(tail -3 "$tmp/cla/$1.err")"
	return 1
}

cla_leader() {
	python3 "$here/cluster_admit.py" leader "$ETCD_URL0" "$cla_P" 2>/dev/null || true
}

# cla_ready: waits (up to 60 s) until a member holds P/leader and all three
# answer /readyz 200.
cla_ready() {
	u=
	i=0
	while [ $i -lt 300 ]; do
		n=0
		for m in m1 m2 m3; do
			eval "u=\$cla_url_$m"
			c=$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$u/readyz" || true)
			[ "$c" = 200 ] && n=$((n + 1))
		done
		[ $n -eq 3 ] && [ -n "$(cla_leader)" ] && return 0
		sleep 0.2
		i=$((i + 1))
	done
	say "   the cluster was not ready within 60 s"
	return 1
}

# cla_start NAME SECS TARGET:CONNECTIONS...: one wrk per target, all
# started at once, for SECS seconds, with one connection per thread.
# TARGET m1..m3 is a member (POST /v1/admission, an AdmissionReview with
# its own uid), e0..e2 an etcd member (POST /v3/kv/put, a 200-byte value
# under /bench-scratch/, each key its own). wrk's report goes to
# $tmp/cla/NAME.TARGET.out, its logs to that .log.THREAD, its pid to that
# .pid and its CPU time (user, system: the shell's `times` of the
# subshell that ran it) to that .cpu. Sets cla_wait (the subshells).
cla_n=0
cla_start() {
	name=$1 dur=$2
	shift 2
	cla_n=$((cla_n + 1))
	rm -f "$tmp/cla/$name".*.out*
	cla_wait=
	for tc in "$@"; do
		t=${tc%:*} c=${tc#*:}
		case $t in
		e*)
			eval "u=\$ETCD_URL${t#e}/v3/kv/put"
			body=$tmp/cla/put.json b64=1
			;;
		*)
			eval "u=\$cla_url_$t/v1/admission"
			body=$tmp/cla/review.json b64=
			;;
		esac
		o=$tmp/cla/$name.$t.out
		(
			env BENCH_BODY="$body" BENCH_ID="/bench-scratch/r$cla_n-$name-$t" \
				BENCH_LOG="$o.log" ${b64:+BENCH_B64=1} \
				$pin_rest wrk -t"$c" -c"$c" -d"${dur}s" --timeout 30s \
				-s "$here/wrk_log.lua" "$u" >"$o" 2>&1 &
			echo $! >"$o.pid"
			wait $! || true
			# (not in a pipeline: a forked `times` has no children)
			times >"$o.times"
			awk 'NR == 2 {
				split($1, u, /[ms]/); split($2, s, /[ms]/)
				printf "%.3f\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' \
				"$o.times" >"$o.cpu"
		) &
		cla_wait="$cla_wait $!"
		# (the pid file exists once the subshell has started wrk)
		i=0
		while [ ! -s "$o.pid" ] && [ $i -lt 100 ]; do sleep 0.01; i=$((i + 1)); done
	done
}

# cla_cpu: the CPU ticks (user + system) so far of m1, m2, m3 and of the
# three etcd processes together, as one line of 4 numbers (a process
# gone counts 0).
cla_cpu() {
	t() { [ -n "$1" ] && awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
	e=0
	for p in $(pgrep -f -- "--data-dir $tmp/cl/etcd/" 2>/dev/null); do
		e=$((e + $(t "$p")))
	done
	echo "$(t "${cla_pid_m1:-}") $(t "${cla_pid_m2:-}") $(t "${cla_pid_m3:-}") $e"
}

# cla_txns: the verdict txns the three members sent so far, and of them
# the ones failed (re-numbered, or doomed by a failed predecessor), as
# "SENT FAILED" (from /metrics; a member not answering counts 0).
cla_txns() {
	for m in m1 m2 m3; do
		eval "u=\${cla_url_$m:-}"
		[ -n "$u" ] && curl -s -m 2 "$u/metrics" 2>/dev/null
	done | awk '$1 == "gpuledger_cluster_verdict_txns_total" { s += $2 }
		$1 == "gpuledger_cluster_verdict_renumbered_total" ||
		$1 == "gpuledger_cluster_verdict_chain_failed_total" { f += $2 }
		END { printf "%d %d\n", s, f }'
}

# cla_etcd_calls: the requests the three etcd members have served so far,
# by gRPC method (the JSON gateway's calls are gRPC calls inside etcd): the
# unary ones handled, the Watch responses sent and the LeaseKeepAlive
# messages received, as one line of METHOD=N words.
cla_etcd_calls() {
	for i in 0 1 2; do
		eval "u=\${ETCD_URL$i:-}"
		[ -n "$u" ] && curl -s -m 2 "$u/metrics" 2>/dev/null
	done | awk '
	function method() {
		match($1, /grpc_method="[^"]*"/)
		return substr($1, RSTART + 13, RLENGTH - 14)
	}
	/^grpc_server_handled_total[{]/ && /grpc_type="unary"/ { n[method()] += $NF }
	/^grpc_server_msg_sent_total[{]/ && /grpc_method="Watch"/ { n["Watch(sent)"] += $NF }
	/^grpc_server_msg_received_total[{]/ && /grpc_method="LeaseKeepAlive"/ { n["LeaseKeepAlive"] += $NF }
	END { for (k in n) printf "%s=%d ", k, n[k]; printf "\n" }'
}

# cla_load NAME SECS TARGET:CONNECTIONS...: cla_start, then the pooled
# figures as one JSON line appended to $tmp/cla/NAME.json, and wrk's CPU
# seconds per second to $tmp/cla/NAME.cpu.
cla_load() {
	name=$1 dur=$2
	c0=$(cla_cpu)
	x0=$(cla_txns)
	k0=$(cla_etcd_calls)
	cla_start "$@"
	# shellcheck disable=SC2086
	wait $cla_wait
	c1=$(cla_cpu)
	echo "$x0 $(cla_txns)" | awk '{ print $3 - $1, $4 - $2 }' >>"$tmp/cla/$name.txns"
	printf '%s\n%s\n' "$k0" "$(cla_etcd_calls)" >>"$tmp/cla/$name.calls"
	echo "$c0 $c1" | awk -v d="$dur" -v hz="$(getconf CLK_TCK)" '{
		n = NF / 2
		for (i = 1; i <= n; i++) printf "%s%.3f", (i > 1 ? " " : ""), ($(i + n) - $i) / hz / d
		printf "\n" }' >>"$tmp/cla/$name.pcpu"
	python3 "$here/cluster_admit.py" merge "$tmp/cla/$name".*.out >>"$tmp/cla/$name.json" ||
		say "   $name: the logs could not be read"
	cat "$tmp/cla/$name".*.out.cpu | awk -v d="$dur" '{ s += $1 } END { printf "%.3f\n", s / d }' >>"$tmp/cla/$name.cpu"
	non=$(tail -1 "$tmp/cla/$name.json" | python3 -c 'import json, sys
j = json.load(sys.stdin)
print("%d non-200, %d without an answer" % (j["non200"], j["no_answer"]) if j["non200"] or j["no_answer"] else "")')
	[ -z "$non" ] || say "   $name: $non"
	rm -f "$tmp/cla/$name".*.out.log.*
}

# cla_kill ROLE: the spread load of 8 connections (3/3/2) for
# kill_before + kill_after seconds, and kill_before seconds in, SIGKILL of
# the member holding P/leader (ROLE sequencer) or of another (ROLE door).
# The killed member's wrk is stopped with it (its connections are a
# Service's to move once the readiness probe fails; a real Service keeps
# sending them to a dead pod until then): the refusals counted are those
# of the survivors' connections. Then every answered verdict is looked up
# in the log a survivor serves, and the killed member is started again.
cla_kill() {
	role=$1
	l=$(cla_leader)
	v=
	if [ "$role" = sequencer ]; then
		v=$l
	else
		# The last that is not the leader: not the member the previous
		# case killed, when that was m1.
		for m in m1 m2 m3; do [ "$m" != "$l" ] && v=$m; done
	fi
	[ -n "$v" ] || { v=m1; say "   no member holds P/leader: m1 is killed as the $role"; }
	set -- m1:3 m2:3 m3:2
	cla_start "kill$role" $((kill_before + kill_after)) "$@"
	sleep "$kill_before"
	t_kill=$(now)
	eval "kill -9 \$cla_pid_$v" || true
	kill -INT "$(cat "$tmp/cla/kill$role.$v.out.pid")" 2>/dev/null || true
	# shellcheck disable=SC2086
	wait $cla_wait
	t_end=$(now)
	surv=''
	killed=''
	url=''
	for tc in "$@"; do
		t=${tc%:*}
		if [ "$t" = "$v" ]; then
			killed="--killed $tmp/cla/kill$role.$t.out"
		else
			surv="$surv --survivor $tmp/cla/kill$role.$t.out"
			[ -n "$url" ] || eval "url=\$cla_url_$t"
		fi
	done
	# shellcheck disable=SC2086
	python3 "$here/cluster_admit.py" kill --kill-at "$t_kill" --end "$t_end" \
		$surv $killed --member-url "$url" --etcd "$ETCD_URL0" --prefix "$cla_P" \
		>>"$tmp/cla/kill$role.json" || say "   kill of the $role: the analysis failed"
	say "   SIGKILL of $v (the $role): $(tail -1 "$tmp/cla/kill$role.json")"
	rm -f "$tmp/cla/kill$role".*.out.log.*
	cla_member "$v" && cla_ready
}

# cla_ratio LABEL A KEY-A B KEY-B: the ratio of the medians of KEY-A in
# $tmp/cla/A.json and KEY-B in B.json, then each run's own ratio (median,
# min-max), as a line of $tmp/limits.
cla_ratio() {
	python3 - "$1" "$tmp/cla/$2.json" "$3" "$tmp/cla/$4.json" "$5" >>"$tmp/limits" <<-'PY'
	import json, sys
	label, fa, ka, fb, kb = sys.argv[1:]
	a = [json.loads(l)[ka] for l in open(fa)]
	b = [json.loads(l)[kb] for l in open(fb)]
	med = lambda v: sorted(v)[len(v) // 2]
	r = [x / y for x, y in zip(a, b) if y]
	if not a or not b or not med(b):
	    print("%s|no figure" % label)
	else:
	    print("%s|%.2f (%.4g / %.4g; runs' pairs %.2f, %.2f-%.2f)" % (
	        label, med(a) / med(b), med(a), med(b), med(r), min(r), max(r)))
	PY
}

bench_cluster_admission() {
	mkdir -p "$tmp/cla"
	(umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$tmp/cla/peer.token")
	cla_opts=$(printf '%s\n' "$cla_opts" | sed "s|@PEER_TOKEN_FILE@|$tmp/cla/peer.token|g")
	say "== cluster admissions against etcd's own puts: 1/8/64 connections, spread 3/3/2 and 22/21/21, the sequencer alone, SIGKILL of the sequencer and of a door (${secs}s, $runs runs)"
	# The state: the feed's simulated history (its seed and options), its
	# objects alive at the end served by the test API server.
	"$bin" simulate --seed 26 --events "${BENCH_CLUSTER_ADM_EVENTS:-20000}" \
		--all-gpu-pods --tenants 10 --days 3 --out "$tmp/cla/sim.ndjson"
	python3 "$here/cluster_admit.py" scenario "$tmp/cla/sim.ndjson" \
		"$tmp/cla/scenario.json" >/dev/null
	rm -f "$tmp/cla/sim.ndjson"
	python3 "$here/../apiserver/fake_apiserver.py" --plain --token bench \
		--scenario "$tmp/cla/scenario.json" --port-file "$tmp/cla/srv.port" \
		>"$tmp/cla/srv.log" 2>&1 &
	cla_srv=$!
	i=0
	while [ ! -s "$tmp/cla/srv.port" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
	[ -s "$tmp/cla/srv.port" ] || { say "bench: the test API server did not start"; return 0; }
	python3 "$here/cluster_admit.py" kubeconfig \
		"$(sed -n 's/^url=//p' "$tmp/cla/srv.port")" bench "$tmp/cla/kubeconfig"
	"$bin" cluster init --etcd "$ETCD_URLS" --prefix "$cla_P" >/dev/null || return 0
	cla_member m1 && cla_member m2 && cla_member m3 || return 0
	cla_ready || return 0
	eval "u=\$cla_url_m1"
	# shellcheck disable=SC2046 # "NAMESPACE CLASS"
	set -- $(python3 "$here/cluster_admit.py" pick "$u")
	python3 "$here/cluster_admit.py" review "$1" "$2" "$tmp/cla/review.tmpl"
	sed 's/@UID@/@ID@/' "$tmp/cla/review.tmpl" >"$tmp/cla/review.json"
	printf '{"key":"@ID@","value":"%s"}\n' \
		"$(head -c 200 /dev/zero | tr '\0' v | base64 -w0)" >"$tmp/cla/put.json"
	cmd "$bin simulate --seed 26 --events ${BENCH_CLUSTER_ADM_EVENTS:-20000} --all-gpu-pods --tenants 10 --days 3; its objects alive at the end served by tests/apiserver/fake_apiserver.py"
	cmd "$bin cluster init --etcd URLS --prefix $cla_P; 3 x $bin member --db DIR --etcd URLS(own first) --prefix $cla_P --name mN --listen 127.0.0.1:0 $cla_opts --watch --kubeconfig KC"
	cmd "per target, all at once: BENCH_BODY=F BENCH_ID=P BENCH_LOG=L wrk -tC -cC -d${secs}s --timeout 30s -s $here/wrk_log.lua URL   (one connection per thread; C of 1, 3/3/2, 22/21/21 or 8, 64)"
	cmd "  etcd: POST ETCD_URLi/v3/kv/put {key: base64(/bench-scratch/...-N), value: base64(200 bytes)} (BENCH_B64=1), then deleterange /bench-scratch/"
	cmd "  admissions: POST MEMBER/v1/admission, an AdmissionReview (VMInstance create, 1 x $2 in $1), request.uid unique"
	cmd "  sequencer: the member named in $cla_P/leader (a range through the gateway), read before each run"
	cmd "  SIGKILL: the spread load of 8 for $((kill_before + kill_after)) s, kill -9 of the member after $kill_before s (its wrk stopped with it), then python3 $here/cluster_admit.py kill (refusals on the survivors' connections; answered uids against GET /v1/events of a survivor)"
	run=0
	while [ $run -lt "$runs" ]; do
		cla_load put1 "$secs" e0:1
		cla_load put8 "$secs" e0:3 e1:3 e2:2
		cla_load put64 "$secs" e0:22 e1:21 e2:21
		python3 "$here/cluster_admit.py" delete "$ETCD_URL0" /bench-scratch/ >/dev/null ||
			say "   the scratch keys were not deleted"
		cla_load spread8 "$secs" m1:3 m2:3 m3:2
		cla_load spread64 "$secs" m1:22 m2:21 m3:21
		l=$(cla_leader)
		[ -n "$l" ] || { l=m1; say "   no member holds P/leader: m1 stands for the sequencer"; }
		cla_load alone8 "$secs" "$l:8"
		cla_load alone64 "$secs" "$l:64"
		cla_kill sequencer || say "   the killed sequencer did not come back"
		cla_kill door || say "   the killed door did not come back"
		run=$((run + 1))
	done
	ag="A cluster's admissions against etcd itself, same run (wrk, one connection per thread, ${secs}s runs)"
	for c in 1 8 64; do
		case $c in 1) sp="one member" ;; 8) sp=3/3/2 ;; *) sp=22/21/21 ;; esac
		cl_col "$tmp/cla/put$c.json" ok_per_s |
			figure "$ag" "etcd blind puts, 200 B, $c conn ($sp)" "puts/s" ""
		cl_col "$tmp/cla/put$c.json" p99_ms | figure "$ag" "  p99 latency" ms ""
	done
	for c in 8 64; do
		case $c in 8) sp=3/3/2 ;; *) sp=22/21/21 ;; esac
		cl_col "$tmp/cla/spread$c.json" ok_per_s |
			figure "$ag" "admissions spread, $c conn ($sp)" "verdicts/s" "$([ $c = 8 ] && echo '>= 0.8x etcd' || echo '>= 1.0x etcd')"
		cl_col "$tmp/cla/spread$c.json" p99_ms | figure "$ag" "  p99 latency (pooled)" ms "<= 1.5x etcd's"
		cl_col "$tmp/cla/spread$c.json" non200 | figure "$ag" "  answers not 200 (503: refused)" answers ""
		cl_col "$tmp/cla/spread$c.json" no_answer | figure "$ag" "  connection failed, no answer" requests ""
	done
	for c in 8 64; do
		cl_col "$tmp/cla/alone$c.json" ok_per_s |
			figure "$ag" "all to the sequencer (P/leader), $c conn" "verdicts/s" ""
		cl_col "$tmp/cla/alone$c.json" p99_ms | figure "$ag" "  p99 latency" ms ""
		cl_col "$tmp/cla/alone$c.json" non200 | figure "$ag" "  answers not 200" answers ""
	done
	for r in sequencer door; do
		cl_col "$tmp/cla/kill$r.json" refused_s |
			figure "$ag" "SIGKILL of the $r, spread 8: refused" s "<= 1 s"
		cl_col "$tmp/cla/kill$r.json" refused_before_s |
			figure "$ag" "  refused in as long a window before it" s ""
		cl_col "$tmp/cla/kill$r.json" slowest_after_s |
			figure "$ag" "  slowest survivor answer after it" s ""
		cl_col "$tmp/cla/kill$r.json" waiting_at_end_max_s |
			figure "$ag" "  longest wait unanswered at the end" s ""
		cl_col "$tmp/cla/kill$r.json" answered_after |
			figure "$ag" "  verdicts answered by survivors after it" verdicts ""
		cl_col "$tmp/cla/kill$r.json" lost |
			figure "$ag" "  answered verdicts lost (not in the log)" verdicts "0"
		cl_col "$tmp/cla/kill$r.json" duplicated |
			figure "$ag" "  answered verdicts in the log twice" verdicts "0"
	done
	cla_ratio "cluster: spread / etcd puts, verdicts/s, 8 conn (>= 0.8)" spread8 ok_per_s put8 ok_per_s
	cla_ratio "cluster: spread / etcd puts, verdicts/s, 64 conn (>= 1.0)" spread64 ok_per_s put64 ok_per_s
	cla_ratio "cluster: spread / etcd puts, p99, 8 conn (<= 1.5)" spread8 p99_ms put8 p99_ms
	cla_ratio "cluster: spread / etcd puts, p99, 64 conn (<= 1.5)" spread64 p99_ms put64 p99_ms
	cla_ratio "cluster: spread / sequencer alone, verdicts/s, 8 conn (>= 0.9)" spread8 ok_per_s alone8 ok_per_s
	cla_ratio "cluster: spread / sequencer alone, verdicts/s, 64 conn (>= 0.9)" spread64 ok_per_s alone64 ok_per_s
	for n in put8 put64 spread8 spread64 alone8 alone64; do
		python3 - "$tmp/cla/$n.pcpu" "$tmp/cla/$n.json" "$tmp/cla/$n.txns" "$n" "$secs" "$tmp/cla/$n.calls" >>"$tmp/info" <<-'PY' || true
		import json, sys
		fp, fj, ft, name, secs, fc = sys.argv[1:]
		rows = [[float(x) for x in l.split()] for l in open(fp)]
		rate = [json.loads(l)["ok_per_s"] for l in open(fj)]
		txns = [[int(x) for x in l.split()] for l in open(ft)]
		med = lambda v: sorted(v)[len(v) // 2]
		col = [med([r[i] for r in rows]) for i in range(4)]
		per = med([sum(r) / q * 1000 for r, q in zip(rows, rate) if q])
		line = "cluster: CPU at %s, s per second (of 2 cores), medians: m1 %.2f, m2 %.2f, m3 %.2f, etcd (3) %.2f; members and etcd %.2f ms per %s" % (
		    name, col[0], col[1], col[2], col[3], per,
		    "put" if name.startswith("put") else "verdict")
		if not name.startswith("put"):
		    vpt = [q * float(secs) / t[0] for q, t in zip(rate, txns) if t[0]]
		    line += "; %.1f verdicts per txn, %d of %d txns failed (first run)" % (
		        med(vpt) if vpt else 0, txns[0][1], txns[0][0])
		# etcd's calls per answer, first run (the pairs of lines of fc)
		try:
		    c = [dict(w.split("=") for w in l.split()) for l in open(fc)][:2]
		    d = {k: int(c[1][k]) - int(c[0].get(k, 0)) for k in c[1]}
		    n = rate[0] * float(secs)
		    calls = ", ".join("%s %.2f" % (k, v / n) for k, v in sorted(d.items()) if v > 0)
		    line += "; etcd calls per %s (first run): %s" % (
		        "put" if name.startswith("put") else "verdict", calls or "none")
		except (OSError, ValueError, IndexError, ZeroDivisionError):
		    pass
		print(line)
		PY
	done
	for n in put64 spread64 alone64; do
		echo "cluster: wrk's CPU at $n: $(stats <"$tmp/cla/$n.cpu" | cut -d'|' -f1) s per second (of 2 cores; $(case $n in put64 | spread64) echo '3 processes' ;; *) echo '1 process' ;; esac), 64 threads, unpinned)" >>"$tmp/info"
	done
	[ -z "$pin_etcd" ] || echo "cluster: pinned (BENCH_CLUSTER_PIN): etcd on CPU 0, the members and wrk on CPU 1" >>"$tmp/info"
	echo "cluster: p99 is pooled over every answered request of every wrk of a figure (each request's own latency, logged by wrk_log.lua); wrk's own percentiles add synthetic samples (coordinated-omission correction) and are not used" >>"$tmp/info"
	echo "cluster: SIGKILL refused = the length of the union of [sent, answered] of every survivor request after the kill not answered 200 (another status, or the connection failed); the killed member's own connections are stopped with it, as a Service stops sending to a pod that fails its readiness probe" >>"$tmp/info"
}

# ---------------------------------------------------------------------------
# The table

print_table() {
	printf '\n%s\n' "gpuledger benchmark: median of $runs runs (min-max), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	[ -s "$tmp/info" ] && sed 's/^/  /' "$tmp/info"
	awk -F'|' '
	function num(x) {
		if (x == "nan") return x
		if (x + 0 >= 1e6) return sprintf("%.2fM", x / 1e6)
		if (x + 0 >= 1e4) return sprintf("%.1fk", x / 1e3)
		if (x + 0 >= 100) return sprintf("%.0f", x)
		return sprintf("%.3g", x)
	}
	{
		if ($1 != last) { printf "\n%s\n", $1; last = $1 }
		if ($3 != "nan" && $3 !~ /^-?[0-9.]/)
			printf "  %-52s %s; target %s\n", $2, $3, $8
		else
			printf "  %-52s %9s  %-19s %-14s %s\n", $2, num($3),
				"(" num($4) "-" num($5) ")", $6, $8
	}' "$res"
	if [ -s "$tmp/isolation" ]; then
		printf '\n%s\n' "Admission isolated from heavy reads: p99 with 8 exports / p99 without (medians of $runs runs, each run a back-to-back pair; issue 28: <= 3)"
		awk -F'|' '{ printf "  %-60s %s\n", $1, $2 }' "$tmp/isolation"
	fi
	if [ -s "$tmp/limits" ]; then
		printf '\n%s\n' "Against the physical limit, measured in the same run (ratio of the medians of $runs runs: figure / limit, the two medians, and the median and range of each run's own pair)"
		awk -F'|' '{ printf "  %-52s %s\n", $1, $2 }' "$tmp/limits"
	fi
	if [ -s "$tmp/ratios" ]; then
		printf '\n%s\n' "Ratios (gpuledger median / baseline median; > 1: gpuledger is faster)"
		awk -F'|' '{ printf "  %-52s %9s\n", $1, $2 }' "$tmp/ratios"
	fi
	printf '\n%s\n' "Commands"
	cat "$cmds"
	cat <<-EOF

	Notes: durable means fsync per commit for gpuledger (LMDB), SQLite
	(WAL, synchronous=FULL) and PostgreSQL (synchronous_commit=on). Baseline
	appends store each event as a row and update materialised per-namespace
	totals in the same transaction, checking nothing (no before/after check,
	no hash chain). Rebuild: gpuledger replays every event through the
	projection from genesis; the baselines recompute all per-namespace totals
	from the events table. Remaining: state_remaining_json in-process vs the
	same recursive-CTE query on SQLite (in-process) and PostgreSQL (libpq,
	unix socket), over the tenants of the default-mix stream's ledger.
	EOF
}

# ---------------------------------------------------------------------------

tmp=
cleanup() {
	exports_stop
	spin_stop
	serve_stop
	base_stop
	pg_stop
	cluster_stop
	[ -n "$tmp" ] && rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

install_missing
$MAKE --no-print-directory bench-build >&2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-bench.XXXXXX")
res=$tmp/results
cmds=$tmp/commands
: >"$res"
: >"$cmds"
: >"$tmp/info"
: >"$tmp/isolation"
: >"$tmp/limits"
start=$(now)

# BENCH_ONLY=heavy runs the heavy-read figures alone, on the same ledger
# (one ingest of the default-mix stream): the isolation ratio in about 3
# minutes instead of the whole table's 7. BENCH_HEAVY_CASES=quiet leaves
# out the case with spinners; BENCH_HEAVY_NO_RSS=1 the RSS figure.
if [ "${BENCH_ONLY:-}" = heavy ]; then
	runs_all=$runs
	runs=1
	ingest mix "$lines" ">= 100k/s"
	runs=$runs_all
	cp -r "$tmp/mix.db" "$tmp/heavy.db"
	pick_tenant
	bench_heavy
	awk -v a="$start" -v b="$(now)" 'BEGIN { printf "total time of the measurements: %.0f s\n", b - a }' >>"$tmp/info"
	print_table
	exit 0
fi

# BENCH_ONLY=ledger runs bench_ledger alone (its figures and the ratios
# against raw LMDB); BENCH_ONLY=cluster the cluster's figures alone.
case ${BENCH_ONLY:-} in
ledger | cluster | holds)
	"bench_$BENCH_ONLY"
	awk -v a="$start" -v b="$(now)" 'BEGIN { printf "total time of the measurements: %.0f s\n", b - a }' >>"$tmp/info"
	print_table
	exit 0
	;;
esac

bench_ledger
ingest mix "$lines" ">= 100k/s"
cp -r "$tmp/mix.db" "$tmp/heavy.db"
ingest gpu "$gpu_lines" ">= 50k/s" --all-gpu-pods
rm -rf "$tmp/gpu.db"
bench_export
bench_holders
bench_holds
bench_compare
bench_serve
bench_baseline
bench_heavy
bench_restart
bench_watch_restart
bench_cluster
awk -v a="$start" -v b="$(now)" 'BEGIN { printf "total time of the measurements: %.0f s\n", b - a }' >>"$tmp/info"
print_table
