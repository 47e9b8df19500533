#!/bin/sh
# Keeps `make run` true: runs tools/demo.sh in self-test mode (it executes
# every command it prints and checks the answers), twice, so that the second
# run reuses the ledger the first one made.
# Usage: tests/demo_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

for run in first second; do
	out=$(GPULEDGER=$bin DEMO_DIR="$tmp/demo" PORT=$port DEMO_SELFTEST=1 \
		sh "$(dirname "$0")/../tools/demo.sh" 2>&1)
	rc=$?
	n_ok=$(printf '%s\n' "$out" | grep -c '^ok: ')
	n_bad=$(printf '%s\n' "$out" | grep -c '^FAIL: ')
	if [ $rc -eq 0 ] && [ "$n_ok" -eq 8 ] && [ "$n_bad" -eq 0 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $run run (exit $rc):"
		printf '%s\n' "$out" | tail -20
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
echo "demo_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
