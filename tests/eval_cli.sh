#!/bin/sh
# Integration test of `gpuledger eval` (DESIGN 6.1): the real binary, fed
# NDJSON on stdin, must answer each line of tests/eval/*.in with the line of
# the same number in the matching .out file, byte for byte.
# Usage: tests/eval_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
dir=$(dirname "$0")/eval
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$(dirname "$0")/lib/cli.sh"


for in in "$dir"/*.in; do
	name=$(basename "$in" .in)
	want="$dir/$name.out"
	args=""
	[ -f "$dir/$name.args" ] && args=$(sed "s|@DIR@|$dir|g" "$dir/$name.args")
	# shellcheck disable=SC2086
	if ! "$bin" eval $args <"$in" >"$tmp/$name.got" 2>"$tmp/$name.err"; then
		bad "$name: exit status $? ($(cat "$tmp/$name.err"))"
		continue
	fi
	# As many expected lines as requests, and as many answers: a
	# truncated .out must not leave requests unchecked.
	nin=$(wc -l <"$in")
	nwant=$(wc -l <"$want")
	ngot=$(wc -l <"$tmp/$name.got")
	if [ "$nin" -gt 0 ] && [ "$nin" -eq "$nwant" ]; then ok; else
		bad "$name: $nin requests but $nwant expected lines in $want"
	fi
	[ "$nin" -eq "$ngot" ] || bad "$name: $nin lines in, $ngot lines out"
	# Compare line by line so that a failure names the request.
	i=0
	while IFS= read -r wline <&3 && IFS= read -r gline <&4; do
		i=$((i + 1))
		if [ "$wline" = "$gline" ]; then
			ok
		else
			bad "$name line $i: $(sed -n "${i}p" "$in")
   want: $wline
    got: $gline"
		fi
	done 3<"$want" 4<"$tmp/$name.got"
done

# A line longer than the bound is answered with an error, and the next line
# is still answered.
{ head -c 5000000 /dev/zero | tr '\0' 'x'; echo
  echo '{"function":"ParseQuantity","input":"1Ki"}'; } |
	"$bin" eval >"$tmp/long.got" 2>/dev/null
if [ "$(sed -n 1p "$tmp/long.got")" = '{"error":"line too long"}' ] &&
	[ "$(sed -n 2p "$tmp/long.got")" = '{"output":{"milli":1024000,"value":1024}}' ]; then
	ok
else
	bad "long line: $(head -c 200 "$tmp/long.got")"
fi

# Usage errors exit 2 with a message; --help exits 0.
if "$bin" eval --nope </dev/null >/dev/null 2>"$tmp/u.err"; then
	bad "eval --nope succeeded"
else
	[ $? -eq 2 ] && grep -q 'unknown option' "$tmp/u.err" && ok || bad "eval --nope: $(cat "$tmp/u.err")"
fi
"$bin" eval --help >/dev/null && ok || bad "eval --help failed"
if "$bin" eval --classes "$tmp/missing.json" </dev/null 2>"$tmp/c.err"; then
	bad "eval --classes missing file succeeded"
else
	grep -q 'missing.json' "$tmp/c.err" && ok || bad "missing classes file: $(cat "$tmp/c.err")"
fi
if "$bin" nosuch 2>/dev/null; then bad "unknown subcommand succeeded"; else ok; fi

echo "eval_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
