#!/bin/sh
# Keeps docs/ true: runs every example of docs/api.md and docs/operations.md
# (tests/docs/run_examples.py: a ledger from tests/query/base.ndjson, a
# server on an ephemeral loopback port, each documented response compared
# with the real one), then checks that the examples cover every subcommand
# and HTTP route and that the docs name only real metrics, options and
# files (tests/docs/check_docs.py).
# Usage: tests/docs_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

# count OUTPUT EXIT: adds a helper's "N passed, N failed" to the totals.
count() {
	printf '%s\n' "$1" | grep -v -e '^ok: ' -e '^checks: ' -e '^examples: '
	p=$(printf '%s\n' "$1" | sed -n 's/^[a-z]*: \([0-9]*\) passed, [0-9]* failed$/\1/p')
	f=$(printf '%s\n' "$1" | sed -n 's/^[a-z]*: [0-9]* passed, \([0-9]*\) failed$/\1/p')
	if [ -z "$p" ]; then
		echo "FAIL: a helper did not finish (exit $2)"
		p=0 f=1
	elif [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
	fi
	pass=$((pass + p))
	fail=$((fail + f))
}

for page in api operations; do
	out=$(python3 "$root/tests/docs/run_examples.py" --bin "$bin" \
		--root "$root" --commands "$tmp/$page.cmds" \
		"$root/docs/$page.md" 2>&1)
	count "$out" $?
done
out=$(python3 "$root/tests/docs/check_docs.py" --bin "$bin" --root "$root" \
	--commands "$tmp/api.cmds" 2>&1)
count "$out" $?

echo "docs_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
