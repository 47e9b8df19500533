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

# start_server [OPTIONS...]: starts serve on 127.0.0.1:0 over the ledger
# $db, sets $port and $server_pid; stop_server stops it ($stopped_rc).
start_server() {
	# The redirection below happens in the background child, after this
	# shell goes on: an old file must not be read for the new port.
	rm -f "$tmp/serve.out"
	"$bin" serve --db "$db" --listen 127.0.0.1:0 "$@" \
		>"$tmp/serve.out" 2>"$tmp/serve.err" &
	server_pid=$!
	port=
	i=0
	while [ $i -lt 100 ] && [ -z "$port" ]; do
		port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' \
			"$tmp/serve.out" 2>/dev/null)
		[ -n "$port" ] || sleep 0.05
		i=$((i + 1))
	done
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
