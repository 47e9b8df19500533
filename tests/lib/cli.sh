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
# wait_listening FILE: waits up to 5 s for serve's "listening on
# 127.0.0.1:PORT" line in FILE and sets $port to PORT ("" if it never came).
wait_listening() {
	port=
	i=0
	while [ $i -lt 100 ] && [ -z "$port" ]; do
		port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' \
			"$1" 2>/dev/null)
		[ -n "$port" ] || sleep 0.05
		i=$((i + 1))
	done
}
# same NAME WANT GOT: the files are byte for byte equal.
same() {
	if cmp -s "$2" "$3"; then ok; else
		bad "$1: output differs"
		diff "$2" "$3" | head -c 800
	fi
}

# start_server [OPTIONS...]: starts serve on 127.0.0.1:0 over the ledger
# $db, sets $port and $server_pid; stop_server stops it ($stopped_rc).
start_server() {
	# The redirection below happens in the background child, after this
	# shell goes on: an old file must not be read for the new port.
	rm -f "$tmp/serve.out"
	"$bin" serve --db "$db" --listen 127.0.0.1:0 "$@" \
		>"$tmp/serve.out" 2>"$tmp/serve.err" &
	server_pid=$!
	wait_listening "$tmp/serve.out"
	[ -n "$port" ] || bad "serve did not start: $(cat "$tmp/serve.err")"
}
stop_server() {
	[ -n "${server_pid:-}" ] || return 0
	kill -TERM "$server_pid" 2>/dev/null
	wait "$server_pid"
	stopped_rc=$?
	server_pid=
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

# serve_up DB LISTEN OUT ERR [OPTIONS...]: starts `$bin serve` in the
# background (stdout to OUT, stderr to ERR) and waits for its port: sets
# $spid and $sport.
serve_up() {
	su_db=$1 su_listen=$2 su_out=$3 su_err=$4
	shift 4
	# The redirection below happens in the background child, after this
	# shell goes on: an old file must not be read for the new port.
	rm -f "$su_out"
	"$bin" serve --db "$su_db" --listen "$su_listen" "$@" \
		>"$su_out" 2>"$su_err" &
	spid=$!
	wait_listening "$su_out"
	sport=$port
	[ -n "$sport" ] || bad "serve did not start: $(cat "$su_err")"
}
# start_server [OPTIONS...]: serve on ${serve_db:-$db} at 127.0.0.1:0 ($tmp/serve.out,
# $tmp/serve.err); sets $server_pid and $port. stop_server sends SIGTERM
# and sets $stopped_rc.
start_server() {
	serve_up "${serve_db:-$db}" 127.0.0.1:0 "$tmp/serve.out" "$tmp/serve.err" "$@"
	server_pid=$spid
	port=$sport
}
stop_server() {
	[ -n "${server_pid:-}" ] || return 0
	kill -TERM "$server_pid" 2>/dev/null
	wait "$server_pid"
	stopped_rc=$?
	server_pid=
}

# py_checks NAME SCRIPT ARGS...: runs a python checker that prints "ok:" and
# "FAIL:" lines and "checks: N passed, N failed" last; shows the failures
# and the "NAME: N passed, N failed" line, and returns non-zero on failure.
py_checks() {
	pc_name=$1
	shift
	pc_out=$(python3 "$@" 2>&1)
	pc_rc=$?
	printf '%s\n' "$pc_out" | grep -v -e '^ok: ' -e '^checks: '
	pass=$(printf '%s\n' "$pc_out" | sed -n 's/^checks: \([0-9]*\) passed.*/\1/p')
	fail=$(printf '%s\n' "$pc_out" | sed -n 's/^checks: [0-9]* passed, \([0-9]*\) failed/\1/p')
	if [ -z "$pass" ]; then
		pass=0 fail=1
		echo "FAIL: $(basename "$1") did not finish (exit $pc_rc)"
	fi
	[ "$pc_rc" -eq 0 ] || [ "$fail" -gt 0 ] || fail=1
	echo "$pc_name: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
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
# test_seed NAME: the seed of a script's random choices, $SEED or one drawn
# from /dev/urandom, in $seed and printed, so that `SEED=N sh tests/NAME.sh
# ./gpuledger` repeats a run. rnd N then sets $r to the next number in
# 0..N-1 (a variable, not output: $(rnd) would run in a subshell and never
# advance the seed).
test_seed() {
	seed=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
	echo "$1: seed $seed (SEED=$seed reruns it)"
}
rnd() {
	seed=$(((seed * 1103515245 + 12345) % 2147483648))
	r=$((seed / 65536 % $1))
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

# npm_schema ROOT: the npm packages of tests/deploy/schema/package.json
# (the manifests' OpenAPI schemas, a CEL evaluator) installed into
# ROOT/build/npm-schema when missing or when the pinned versions changed,
# with tests/deploy/schema/*.mjs beside them (a script must sit beside
# node_modules to resolve them). Sets $mods; returns non-zero, saying why,
# when node or npm is missing or the install fails.
npm_schema() {
	mods=$1/build/npm-schema
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		echo "FAIL: node and npm are needed (tools/install-deps.sh installs them)"
		return 1
	fi
	if ! cmp -s "$1/tests/deploy/schema/package.json" "$mods/package.json" ||
		[ ! -d "$mods/node_modules/kubernetes-models" ]; then
		rm -rf "$mods"
		mkdir -p "$mods"
		cp "$1/tests/deploy/schema/package.json" "$mods/"
		if ! (cd "$mods" && npm install --no-audit --no-fund --silent) \
			>"$mods/npm.out" 2>&1; then
			echo "FAIL: npm install: $(tail -5 "$mods/npm.out")"
			rm -f "$mods/package.json" # try again next time
			return 1
		fi
	fi
	cp "$1/tests/deploy/schema/validate.mjs" "$1/tests/deploy/schema/cel_match.mjs" "$mods/"
}
