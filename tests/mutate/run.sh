#!/bin/sh
# `make mutate`: a small mutation runner (not part of CI: it is slow).
#
# tests/mutate/mutations.txt lists deliberate bugs, one block each:
#
#   M <id> <file> <suite>...
#   - <text of the line to change: a fixed string, first line that has it>
#   + <what that text becomes>
#
# (a "- " line may end in " @N" to take the N-th line that has the text).
# A suite is unit:<module>[:<tcase>] (tests/test_<module>, optionally one
# Check TCase) or cli:<name> (tests/<name>_cli.sh). Each mutation is applied
# alone to a scratch copy of the tree (build directory included, so only
# the changed file recompiles), its suites run, and it is "killed" when any
# suite fails (or times out) and a "SURVIVOR" when all pass. A mutation
# whose text is not found or that does not compile is an error: the list
# must follow the code. Prints the score and the survivors; exits 1 when
# any mutation survived or is in error.
#
# Usage: sh tests/mutate/run.sh [ID...]   (default: every mutation)
#   MUTATE_LIST=FILE  another list;  MUTATE_TIMEOUT=SECONDS per suite [300]
#   KEEP=1 keeps the scratch copy
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
list=${MUTATE_LIST:-$root/tests/mutate/mutations.txt}
limit=${MUTATE_TIMEOUT:-300}
scratch=$(mktemp -d /tmp/gpuledger-mutate-XXXXXX)
trap '[ -n "${KEEP:-}" ] && echo "kept $scratch" || rm -rf "$scratch"' EXIT
trap 'exit 1' INT TERM

[ -f "$list" ] || { echo "mutate: no list $list"; exit 2; }
# Read from a copy: the list may be edited while this runs.
cp "$list" "$scratch/mutations.list" && list=$scratch/mutations.list
command -v python3 >/dev/null || { echo "mutate: python3 is needed"; exit 2; }

# The scratch copy: the tracked files as they are in the work tree, and a
# build of them (reused from the tree when there is one).
echo "mutate: copying the tree to $scratch"
(cd "$root" && git ls-files -z -co --exclude-standard | xargs -0 tar cf - 2>/dev/null) |
	(cd "$scratch" && tar xf -) || { echo "mutate: copy failed"; exit 2; }
[ -d "$root/build/rel" ] && mkdir -p "$scratch/build" &&
	cp -a "$root/build/rel" "$scratch/build/rel"
# Objects whose dependency files name the original tree are rebuilt once.
find "$scratch/build" -name '*.d' -exec sed -i "s|$root/||g" {} + 2>/dev/null
cd "$scratch" || exit 2
echo "mutate: building the unmutated tree"
if ! make -s gpuledger build/rel/tests/test_model build/rel/tests/test_ledger \
	build/rel/tests/test_ingest build/rel/tests/test_query \
	>"$scratch/build.log" 2>&1; then
	echo "mutate: the unmutated tree does not build:"
	tail -20 "$scratch/build.log"
	exit 2
fi

# apply FILE PATTERN REPLACEMENT: changes the first (or N-th) line with
# PATTERN; status 3 when it is not found, 4 when the line does not change.
apply() {
	python3 - "$1" "$2" "$3" <<'EOF'
import re, sys
path, pat, rep = sys.argv[1:]
nth = 1
m = re.match(r"^(.*) @([0-9]+)$", pat)
if m:
    pat, nth = m.group(1), int(m.group(2))
lines = open(path).read().split("\n")
seen = 0
for i, l in enumerate(lines):
    if pat in l:
        seen += 1
        if seen == nth:
            new = l.replace(pat, rep, 1)
            if new == l:
                sys.exit(4)
            lines[i] = new
            open(path, "w").write("\n".join(lines))
            sys.exit(0)
sys.exit(3)
EOF
}

# suite SUITE: builds and runs it; status 0 when it passes.
suite() {
	case $1 in
	unit:*)
		m=${1#unit:}
		case=""
		case $m in *:*) case=${m#*:}; m=${m%%:*} ;; esac
		make -s "build/rel/tests/test_$m" </dev/null >>"$scratch/m.log" 2>&1 || return 90
		env CK_FORK=yes ${case:+CK_RUN_CASE=$case} timeout "$limit" \
			nice "build/rel/tests/test_$m" </dev/null \
			>>"$scratch/m.log" 2>&1
		;;
	cli:*)
		make -s gpuledger </dev/null >>"$scratch/m.log" 2>&1 || return 90
		timeout "$limit" nice sh "tests/${1#cli:}_cli.sh" ./gpuledger \
			</dev/null >>"$scratch/m.log" 2>&1
		;;
	*)
		echo "mutate: unknown suite $1" >>"$scratch/m.log"
		return 91
		;;
	esac
}

# The baseline: every suite the chosen mutations name passes on the
# unmutated tree, or no kill would mean anything.
base_suites=$(awk -v want=" $* " '
	/^M / { if (want == "  " || index(want, " " $2 " ")) for (i = 4; i <= NF; i++) print $i }
' "$list" | sort -u)
for s in $base_suites; do
	: >"$scratch/m.log"
	if ! suite "$s"; then
		echo "mutate: $s fails on the unmutated tree:"
		tail -20 "$scratch/m.log"
		exit 2
	fi
	echo "mutate: baseline $s passes"
done

total=0 killed=0 survived=0 errors=0
survivors="" broken=""
want=" $* "
run_one() { # id file suites; pattern and replacement in $pat, $rep
	id=$1 file=$2
	shift 2
	case $want in "  ") ;; *" $id "*) ;; *) return ;; esac
	total=$((total + 1))
	cp "$file" "$scratch/orig"
	: >"$scratch/m.log"
	apply "$file" "$pat" "$rep"
	arc=$?
	verdict=""
	if [ $arc -ne 0 ]; then
		verdict="ERROR (text not found in $file)"
		[ $arc -eq 4 ] && verdict="ERROR (replacement changes nothing)"
	else
		verdict=survived
		for s in "$@"; do
			suite "$s"
			src=$?
			if [ $src -eq 90 ]; then verdict="ERROR (does not compile)"; break; fi
			if [ $src -eq 91 ]; then verdict="ERROR (unknown suite $s)"; break; fi
			if [ $src -ne 0 ]; then verdict="killed by $s"; break; fi
		done
	fi
	# Restore with a fresh mtime, so that make rebuilds the original.
	cat "$scratch/orig" >"$file"
	touch "$file"
	case $verdict in
	killed*) killed=$((killed + 1)) ;;
	survived)
		survived=$((survived + 1))
		survivors="$survivors
  $id  $file: \"$pat\" -> \"$rep\" ($*)"
		;;
	*)
		errors=$((errors + 1))
		broken="$broken
  $id  $verdict"
		tail -5 "$scratch/m.log" | sed 's/^/      /'
		;;
	esac
	printf '%-28s %s\n' "$id" "$verdict"
}

id="" file="" suites="" pat="" rep=""
flush() {
	[ -n "$id" ] || return 0
	# shellcheck disable=SC2086
	run_one "$id" "$file" $suites
	id=""
}
while IFS= read -r line || [ -n "$line" ]; do
	case $line in
	'M '*)
		flush
		set -f
		# shellcheck disable=SC2086
		set -- ${line#M }
		set +f
		id=$1 file=$2
		shift 2
		suites=$*
		pat="" rep=""
		;;
	'- '*) pat=${line#- } ;;
	'+ '*) rep=${line#+ } ;;
	'+') rep="" ;;
	*) ;;
	esac
done <"$list"
flush
scored=$((killed + survived))
echo
echo "mutate: $total mutations: $killed killed, $survived survived, $errors errors"
if [ $scored -gt 0 ]; then
	echo "mutate: score $killed/$scored ($((killed * 100 / scored))%)"
fi
[ -n "$survivors" ] && echo "mutate: SURVIVORS:$survivors"
[ -n "$broken" ] && echo "mutate: ERRORS:$broken"
[ $survived -eq 0 ] && [ $errors -eq 0 ]
