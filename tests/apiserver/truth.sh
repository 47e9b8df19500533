# The oracle of the watcher tests (sourced; needs $here, the tests folder,
# $bin, $tmp, $url, $token, and $truth_ca, the server's CA file, or empty
# for plain http).
#   truth          the server's objects now, replayed into a fresh ledger;
#                  its normalised state in $tmp/truth.json
#   norm DB        the normalised state of DB on stdout; fails when replay
#                  fails or prints nothing (jq alone exits 0 on empty input,
#                  and two empty files would "converge")
#   same_as_truth DB
norm() {
	"$bin" replay --db "$1" --json >"$tmp/norm.raw" 2>"$tmp/norm.err" &&
		[ -s "$tmp/norm.raw" ] &&
		jq -e -S 'del(.seq, .time, .chainHead)' "$tmp/norm.raw"
}
truth() {
	rm -rf "$tmp/truthdb"
	# shellcheck disable=SC2086
	python3 "$here/apiserver/truth.py" "$url" "$token" ${truth_ca:+"$truth_ca"} >"$tmp/truth.ndjson" &&
		"$bin" watch --db "$tmp/truthdb" --no-sync \
			--from "$tmp/truth.ndjson" >/dev/null 2>"$tmp/truth.err" &&
		norm "$tmp/truthdb" >"$tmp/truth.json"
}
same_as_truth() {
	norm "$1" >"$tmp/got.json" 2>/dev/null && cmp -s "$tmp/got.json" "$tmp/truth.json"
}
