#!/bin/sh
# Keeps `make run` true: runs tools/demo.sh in self-test mode (it executes
# every command it prints and checks the answers), twice, so that the second
# run reuses the ledger the first one made. The first run also writes the
# README's tour (tools/demo.sh DEMO_TOUR, serve under a frozen wall clock so
# that every value is reproducible), which must equal the block between the
# README's tour markers and hold exactly the commands make run prints, in
# their order: the tour is a real run and cannot drift.
# UPDATE_TOUR=1 writes the new tour into README.md instead of failing.
# Usage: tests/demo_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

root=$(cd "$(dirname "$0")/.." && pwd)
for run in first second; do
	tour=
	[ $run = first ] && tour=$tmp/tour
	out=$(GPULEDGER=$bin DEMO_DIR="$tmp/demo" PORT=$port DEMO_SELFTEST=1 \
		DEMO_TOUR=$tour DEMO_FAKETIME="2026-02-01 00:00:00" \
		sh "$(dirname "$0")/../tools/demo.sh" 2>&1)
	rc=$?
	n_ok=$(printf '%s\n' "$out" | grep -c '^ok: ')
	n_bad=$(printf '%s\n' "$out" | grep -c '^FAIL: ')
	if [ $rc -eq 0 ] && [ "$n_ok" -eq 10 ] && [ "$n_bad" -eq 0 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $run run (exit $rc):"
		printf '%s\n' "$out" | tail -20
	fi
	# The tour is what make run prints: the same commands in the same
	# order (the printed ones with this run's URL, directory and binary
	# written as a default run's).
	if [ $run = first ]; then
		printf '%s\n' "$out" | sed -n '/Or try:$/,/^Ctrl-C stops/p' |
			sed -n 's/^  \([^ #].*\)$/$ \1/p' |
			sed -e "s|http://127.0.0.1:$port|http://127.0.0.1:8420|g" \
				-e "s|$tmp/demo|var/demo|g" -e "s|$bin|./gpuledger|g" >"$tmp/printed"
		grep '^\$ ' "$tmp/tour" >"$tmp/toured" 2>/dev/null
		if [ -s "$tmp/printed" ] && cmp -s "$tmp/printed" "$tmp/toured"; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
			echo "FAIL: the tour's commands are not the ones make run prints:"
			diff "$tmp/printed" "$tmp/toured" | head -10
		fi
	fi
	# make run keeps only what the demo needs, and says how much that is.
	if printf '%s\n' "$out" | grep -Eq '^== disk used by the demo: [0-9.,]+[KMG]? in ' &&
		[ ! -e "$tmp/demo/stream.ndjson" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $run run: no disk use line, or the stream was kept"
	fi
	case $run in
	second)
		if printf '%s\n' "$out" | grep -q '^== reusing the demo ledger'; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
			echo "FAIL: the second run did not reuse the ledger"
		fi
		;;
	esac
done
# Without PORT, a taken 8420 (another `make run`, another program) is not
# shared: the demo serves on a free port and prints it. The ledger of the
# runs above is reused, so this run is quick.
# The holder answers every request with 200 {}, as another server would:
# a demo that talks to it fails its self-test.
python3 -c '
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
    do_GET = do_POST = answer
    def log_message(self, *a):
        pass
try:
    srv = http.server.HTTPServer(("127.0.0.1", 8420), H)
except OSError:
    srv = None  # taken already: all the same to the demo
print("held", flush=True)
if srv:
    srv.timeout = 600
    srv.serve_forever()' >"$tmp/holder.out" 2>&1 &
holder_pid=$!
i=0
until grep -q held "$tmp/holder.out" 2>/dev/null || [ $i -gt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
out=$(env -u PORT GPULEDGER=$bin DEMO_DIR="$tmp/demo" DEMO_SELFTEST=1 \
	sh "$root/tools/demo.sh" 2>&1)
rc=$?
kill $holder_pid 2>/dev/null
wait $holder_pid 2>/dev/null
got=$(printf '%s\n' "$out" |
	sed -n 's|^== gpuledger serve is listening on http://127.0.0.1:\([0-9]*\) .*|\1|p')
if [ $rc -eq 0 ] && [ -n "$got" ] && [ "$got" != 8420 ] &&
	printf '%s\n' "$out" | grep -q '^== port 8420 is taken: serving on a free port instead$' &&
	[ "$(printf '%s\n' "$out" | grep -c '^ok: ')" -eq 10 ]; then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL: with 8420 taken (exit $rc, port '$got'):"
	printf '%s\n' "$out" | tail -20
fi

# The README's tour is the first run's.
readme=$root/README.md
begin='<!-- tour: tests/demo_cli.sh writes this block from a real run (UPDATE_TOUR=1) -->'
end='<!-- tour end -->'
awk -v b="$begin" -v e="$end" '$0 == e { on = 0 } on && !/^```/ { print }
	$0 == b { on = 1 }' "$readme" >"$tmp/readme-tour"
if [ ! -s "$tmp/tour" ]; then
	fail=$((fail + 1))
	echo "FAIL: the demo wrote no tour"
elif cmp -s "$tmp/tour" "$tmp/readme-tour"; then
	pass=$((pass + 1))
elif [ -n "${UPDATE_TOUR:-}" ]; then
	awk -v b="$begin" -v e="$end" -v f="$tmp/tour" '
		$0 == e { print "```"; while ((getline l < f) > 0) print l;
			print "```"; on = 0 }
		!on { print } $0 == b { on = 1 }' "$readme" >"$tmp/readme.new" &&
		cp "$tmp/readme.new" "$readme"
	echo "demo_cli: README.md tour updated"
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL: the README tour differs from a real run (UPDATE_TOUR=1 $0 $bin rewrites it):"
	diff "$tmp/readme-tour" "$tmp/tour" | head -20
fi
echo "demo_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
