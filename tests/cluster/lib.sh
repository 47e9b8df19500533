# The etcd harness of the cluster scripts (POSIX sh, sourced after
# tests/lib/cli.sh; DESIGN 11's tests with a real 3-member etcd on loopback
# and a TCP proxy per link, tests/cluster/etcd_cluster.py). The caller sets
# bin, here (tests/), tmp, pass and fail, and pids and hpid (empty) for its
# EXIT trap, which kills $pids and $hpid. Functions:
#
#   etcd_up SCRIPT [HARNESS OPTIONS...]
#       starts the harness in $tmp/etcd (it exits with this shell), waits up
#       to 60 s for it, sources $tmp/etcd/env (ETCD_URLS, ETCD_URL0..2,
#       PROXY_URL0..2, ...), sets $hpid and $harness; if it does not start,
#       counts a failure, prints "SCRIPT: N passed, N failed" and exits 1.
#   ctl ARGS...         the harness's ctl (mode pN forward|drop-answer|reset|
#                       delay MS|blackhole, ...); a refusal is a failure.
#   is NAME GOT WANT    a check that GOT equals WANT.
#   member_up NAME DB ETCD PREFIX [OPTIONS...]
#       starts `gpuledger member` (under $wrap, a command prefix, when set)
#       on DB with --listen 127.0.0.1:0 --etcd-timeout-ms 1500 and OPTIONS,
#       stdout to $tmp/NAME.out, stderr appended to $tmp/NAME.err; waits for
#       its port; sets $pid_NAME and $port_NAME and adds the pid to $pids.
#   member_stop NAME [SIGNAL]   signals it (TERM) and waits: $stopped_rc.
#   member_seq NAME     its last applied seq (its /readyz names it, ready
#                       or not).
#   review UID NAME COUNT
#       an AdmissionReview (one line) of a VMInstance create of COUNT h100
#       in tenant-acme (tests/webhook/vminstance-create-allowed.json).
#   apiserver_up SCRIPT TOKEN
#       the test Kubernetes API server (tests/apiserver/fake_apiserver.py,
#       plain HTTP, bearer TOKEN, the small scenario) with its pid in
#       $pids, $tmp/kc a kubeconfig for it, $cport its control port and
#       apply WATCH_EVENTS (NDJSON) to change its objects; if it does not
#       start, counts a failure, prints "SCRIPT: ..." and exits 1.

etcd_up() {
	eu_script=$1
	shift
	harness=$here/cluster/etcd_cluster.py
	python3 "$harness" up "$tmp/etcd" --watch-pid $$ "$@" >"$tmp/harness.log" 2>&1 &
	hpid=$!
	eu_i=0
	while [ ! -f "$tmp/etcd/ready" ] && [ $eu_i -lt 600 ] && kill -0 "$hpid" 2>/dev/null; do
		sleep 0.1
		eu_i=$((eu_i + 1))
	done
	if [ ! -f "$tmp/etcd/ready" ]; then
		bad "the etcd cluster did not start: $(tail -5 "$tmp/harness.log")"
		echo "$eu_script: $pass passed, $fail failed"
		exit 1
	fi
	. "$tmp/etcd/env"
}

ctl() { python3 "$harness" ctl "$tmp/etcd" "$@" >/dev/null || bad "ctl $*"; }

is() { # NAME GOT WANT
	if [ "$2" = "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi
}

wrap=
member_up() {
	mu_n=$1 mu_db=$2 mu_etcd=$3 mu_prefix=$4
	shift 4
	# The redirection happens in the background child, after this shell
	# goes on: an old file must not be read for the new port.
	rm -f "$tmp/$mu_n.out"
	$wrap "$bin" member --db "$mu_db" --etcd "$mu_etcd" --prefix "$mu_prefix" \
		--name "$mu_n" --listen 127.0.0.1:0 --etcd-timeout-ms 1500 "$@" \
		>"$tmp/$mu_n.out" 2>>"$tmp/$mu_n.err" &
	eval "pid_$mu_n=$!"
	pids="$pids $!"
	wait_listening "$tmp/$mu_n.out"
	eval "port_$mu_n=$port"
	[ -n "$port" ] || bad "member $mu_n did not start: $(tail -3 "$tmp/$mu_n.err")"
}

member_stop() {
	eval "ms_pid=\$pid_$1"
	kill "-${2:-TERM}" "$ms_pid" 2>/dev/null
	wait "$ms_pid"
	stopped_rc=$?
}

member_seq() {
	eval "mq_port=\$port_$1"
	curl -s -m 2 "http://127.0.0.1:$mq_port/readyz" | jq -r .seq 2>/dev/null
}

review() {
	jq -c --arg uid "$1" --arg name "$2" --argjson n "$3" \
		'.request.uid = $uid | .request.name = $name |
		 .request.object.metadata = {name: $name, namespace: "tenant-acme"} |
		 .request.object.spec.gpus = [{class: "h100", count: $n}]' \
		"$here/webhook/vminstance-create-allowed.json"
}

apiserver_up() {
	python3 "$here/apiserver/fake_apiserver.py" --plain --token "$2" \
		--scenario "$here/apiserver/scenarios/small.json" --seed 5 \
		--port-file "$tmp/srv.port" >"$tmp/srv.log" 2>&1 &
	pids="$pids $!"
	if ! wait_until 20 test -f "$tmp/srv.port"; then
		bad "the API server did not start: $(cat "$tmp/srv.log")"
		echo "$1: $pass passed, $fail failed"
		exit 1
	fi
	. "$tmp/srv.port"
	cport=$control_port
	cat >"$tmp/kc" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {server: "$url"}
users:
- name: w
  user: {token: $2}
contexts:
- name: fake
  context: {cluster: fake, user: w}
current-context: fake
EOF
}
apply() { curl -sS -f -X POST --data-binary "$1" "http://127.0.0.1:$cport/_control/apply" >/dev/null || bad "apply failed"; }
