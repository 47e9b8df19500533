# Shared helpers of the tests/*_cli.sh scripts (POSIX sh, sourced). The
# caller sets pass=0, fail=0 and tmp (a scratch directory) first.

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# run CMD...: stdout to $tmp/out, stderr to $tmp/err, status to $rc.
run() {
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
# expect NAME STATUS: the last run exited with STATUS.
expect() {
	if [ "$rc" -eq "$2" ]; then ok; else
		bad "$1: exit $rc, want $2 ($(head -c 300 "$tmp/err"))"
	fi
}
# has NAME FILE REGEX: FILE has a line matching the extended regex.
has() {
	if grep -Eq -- "$3" "$2"; then ok; else
		bad "$1: no line matching /$3/ in: $(head -c 300 "$2")"
	fi
}
# same NAME WANT GOT: the files are byte for byte equal.
same() {
	if cmp -s "$2" "$3"; then ok; else
		bad "$1: output differs"
		diff "$2" "$3" | head -c 800
	fi
}

# A test CA: gen_ca NAME writes $tmp/NAME.key and $tmp/NAME.crt.
gen_ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -keyout "$tmp/$1.key" -out "$tmp/$1.crt" -days 2 \
		-subj "/CN=$1" -addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}
# gen_cert NAME CA SUBJECT EXTENSIONS: a certificate signed by CA, with
# extensions separated by ';'.
gen_cert() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$tmp/$1.key" -out "$tmp/$1.csr" -subj "$3" 2>/dev/null &&
		printf '%s\n' "$4" | tr ';' '\n' >"$tmp/$1.ext" &&
		openssl x509 -req -in "$tmp/$1.csr" -CA "$tmp/$2.crt" \
			-CAkey "$tmp/$2.key" -CAcreateserial -out "$tmp/$1.crt" \
			-days 2 -extfile "$tmp/$1.ext" 2>/dev/null
}

# wait_until SECONDS COMMAND...: runs COMMAND every 0.1 s until it succeeds
# (status 0) or SECONDS pass (status 1).
wait_until() {
	limit=$(($1 * 10))
	shift
	n=0
	while [ $n -lt $limit ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}
# need_cmds SCRIPT CMD...: every command is on the PATH, or the script
# fails at once (a missing tool is a failure, never a quiet skip).
need_cmds() {
	script=$1
	shift
	for c in "$@"; do
		if ! command -v "$c" >/dev/null 2>&1; then
			echo "FAIL: $c not found (tools/install-deps.sh installs it)"
			echo "$script: 0 passed, 1 failed"
			exit 1
		fi
	done
}
