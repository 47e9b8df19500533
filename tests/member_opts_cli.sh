#!/bin/sh
# A member takes serve's options (issue 40): `gpuledger member` is serve's
# routes on its own ledger, so every option of `serve` is one of `member`'s
# too, with the same value and the same help (one table, OPT_SERVER in
# tools/tools.h), except the few below, each with the reason a member does
# without it. An option added to serve's table and not to the shared group
# makes this fail until it is added there or listed here with its reason.
#  - the option lists (SUB --completion-helper) and each shared option's man
#    page item (SUB --help-man: its value's name and help) are compared;
#  - a member checks serve's bounds as serve does (before it reaches etcd);
#  - with etcd on loopback (tests/cluster/etcd_cluster.py, when etcd is
#    installed): a member started with --max-body and --rates honours them.
# Usage: tests/member_opts_cli.sh [PATH/TO/gpuledger]
set -u
bin=${1:-./gpuledger}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
hpid=
pids=
trap 'for p in $pids; do kill -9 "$p" 2>/dev/null; done; [ -n "$hpid" ] && kill "$hpid" 2>/dev/null;
	wait 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"

# serve's options that a member does not take, and why:
#   --create     a member's --db is made when missing, always;
#   --read-only  a replica's (gpuledger replicate): a member records
#                verdicts through etcd;
#   --primary    named in a --read-only replica's 503 answers.
serve_only="--create --primary --read-only"
# Options both have under one name with a meaning of each command's own
# (their help differs):
#   --db          serve refuses a directory without a ledger (unless
#                 --create); a member makes its own;
#   --sign-key, --sign-every
#                 serve signs on a timer (SECS); a member at every multiple
#                 of N seqs, so that every member writes the same note
#                 (DESIGN 11 rule 10).
own_meaning="--db --sign-every --sign-key"

opts() { "$bin" "$1" --completion-helper | cut -f1 | sort; }
opts serve >"$tmp/serve.opts"
opts member >"$tmp/member.opts"
[ -s "$tmp/serve.opts" ] && [ -s "$tmp/member.opts" ] && ok ||
	bad "no option list from serve or member --completion-helper"
missing=$(comm -23 "$tmp/serve.opts" "$tmp/member.opts" | tr '\n' ' ')
is_list() { [ "$(echo $1)" = "$(echo $2)" ]; }
if is_list "$missing" "$serve_only"; then ok; else
	bad "serve's options that member lacks: '$(echo $missing)'; want" \
		"'$serve_only' (put a new option in OPT_SERVER, tools/tools.h," \
		"or list it in serve_only here with the reason)"
fi

# items SUB: "OPTION<TAB>its man page item" per option, one line each.
items() {
	"$bin" "$1" --help-man | awk '
		/^\.SH OPTIONS/ { on = 1; next }
		/^\.SH/ { on = 0 }
		!on { next }
		/^\.TP$/ { if (name != "") print name "\t" item; name = ""; item = ""; next }
		name == "" { name = $1; sub(/^\\fB/, "", name); sub(/\\fR.*/, "", name);
			gsub(/\\-/, "-", name) }
		{ item = item $0 "\\n" }
		END { if (name != "") print name "\t" item }' | sort
}
items serve >"$tmp/serve.items"
items member >"$tmp/member.items"
n=0
for o in $(comm -12 "$tmp/serve.opts" "$tmp/member.opts"); do
	case " $own_meaning --help --version " in *" $o "*) continue ;; esac
	n=$((n + 1))
	s=$(grep -F -- "$o	" "$tmp/serve.items" | sed -n "/^$o	/p")
	m=$(grep -F -- "$o	" "$tmp/member.items" | sed -n "/^$o	/p")
	if [ -n "$s" ] && [ "$s" = "$m" ]; then ok; else
		bad "$o: member's item is not serve's (a copy, not the shared" \
			"group?): serve '$s', member '$m'"
	fi
done
[ "$n" -ge 17 ] && ok || bad "only $n options compared"
for o in $own_meaning; do
	grep -qx -- "$o" "$tmp/serve.opts" && grep -qx -- "$o" "$tmp/member.opts" &&
		ok || bad "$o: listed as both commands' own, but one lacks it"
done

# A member checks serve's bounds, with serve's words, before etcd.
for o in --max-conns --handshake-ms --tls-reload-ms; do
	run "$bin" serve --db "$tmp/none" "$o" 99999999999
	expect "serve $o too large" 2
	has "serve $o too large" "$tmp/err" "^gpuledger: serve: $o 99999999999 is too large$"
	# (timeout: a member that took the value would wait for etcd.)
	run timeout 20 "$bin" member --db "$tmp/m" --etcd http://127.0.0.1:9 \
		--prefix /t --name a "$o" 99999999999
	expect "member $o too large" 2
	has "member $o too large" "$tmp/err" "^gpuledger: member: $o 99999999999 is too large$"
done
[ ! -e "$tmp/m" ] && ok || bad "a refused member made its --db"

# The running member needs etcd and curl (tools/install-deps.sh installs
# them): without them the script fails, never skips quietly.
need_cmds member_opts_cli etcd etcdctl curl jq
. "$here/cluster/lib.sh"
etcd_up member_opts_cli
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /opts
expect "cluster init" 0
member_up a "$tmp/a" "$ETCD_URLS" /opts --max-body 256 \
	--rates "$here/export/rates.json"
big=$(head -c 1000 /dev/zero | tr '\0' x)
got=$(curl -s -o /dev/null -w '%{http_code}' -m 5 -H 'Content-Type: application/json' \
	--data "{\"pad\": \"$big\"}" "http://127.0.0.1:$port_a/v1/admission")
is "a member's --max-body: a larger body" "$got" 413
member_stop a
is "SIGTERM stops the member" "$stopped_rc" 0
# A rates file the member cannot read is refused at the start, as serve
# refuses it: --rates reaches the server.
run timeout 20 "$bin" member --db "$tmp/b" --etcd "$ETCD_URLS" --prefix /opts --name b \
	--listen 127.0.0.1:0 --rates "$tmp/no-such-rates.json"
expect "member --rates of a missing file" 2
has "member --rates of a missing file names it" "$tmp/err" "no-such-rates.json"

echo "member_opts_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
