#!/bin/sh
# The command line as an operator meets it: `gpuledger version` and
# --version on every subcommand (version and commit baked in at build);
# `make install` installs the binary, a man page per subcommand and bash
# completion, both made from the option tables the parser reads; errors about a --db path name it once
# and say what is wrong; serve refuses a directory that holds no ledger
# unless --create.
# Usage: tests/manners_cli.sh [PATH/TO/gpuledger]
set -u
bin=${1:-./gpuledger}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$root/tests/lib/cli.sh"

need_cmds manners_cli mandoc man bash curl jq
# start_serve OUT ARGS...: serve on an ephemeral port, output to OUT; sets
# $p (its pid) and $port once it listens.
start_serve() {
	out=$1
	shift
	"$bin" serve --listen 127.0.0.1:0 "$@" >"$out" 2>&1 &
	p=$!
	wait_until 10 grep -q '^listening on' "$out"
	port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$out")
}

# ---------------------------------------------------------------- version
want=$(sed -n 's/^VERSION := //p' "$root/Makefile")
run "$bin" version
expect "gpuledger version" 0
has "version and commit" "$tmp/out" \
	"^gpuledger $want \\(commit ([0-9a-f]{12}|unknown)\\)\$"
cp "$tmp/out" "$tmp/version"
run "$bin" --version
expect "gpuledger --version" 0
same "gpuledger --version" "$tmp/version" "$tmp/out"
subs=$("$bin" --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p')
[ -n "$subs" ] && ok || bad "gpuledger --help lists no subcommands"
for s in $subs; do
	run "$bin" "$s" --version
	expect "$s --version" 0
	same "$s --version" "$tmp/version" "$tmp/out"
done

# ------------------------------------------------------------------ --help
# Each --help is made from its option table (tools/opts.c): every option it
# lists is one the parser takes (--OPT=1 is not "unknown"), each with a help
# text, and no line is wider than 79 columns.
for s in $subs; do
	"$bin" "$s" --help >"$tmp/help" 2>&1 || bad "$s --help failed"
	cp "$tmp/help" "$tmp/help.$s"
	awk -v s="$s" 'length > 79 { print "FAIL: " s " --help: a line of " length " columns: " $0; bad = 1 }
		END { exit bad }' "$tmp/help" && ok || fail=$((fail + 1))
	listed=$(sed -n 's/^  \(--[a-z][a-z0-9-]*\).*/\1/p' "$tmp/help" | sort -u)
	[ -n "$listed" ] || [ "$s" = version ] || bad "$s --help lists no option"
	missing=
	for o in $listed; do
		"$bin" "$s" "$o=1" --zz-no-such-option >/dev/null 2>"$tmp/err"
		grep -q "unknown option \"$o" "$tmp/err" && missing="$missing $o"
	done
	[ -z "$missing" ] && ok || bad "$s --help lists options it does not take:$missing"
	# An option alone on its line has its help text on the next one.
	awk '/^  --/ { if (want) exit 1; want = (NF == 1 || NF == 2) && !/  [^ -]/ ; next }
		want { if (!/^        /) exit 1; want = 0 }
		END { exit want }' "$tmp/help" && ok || bad "$s --help: an option without help"
done

# ---------------------------------------------------------------- install
# MAKEFLAGS carries SANITIZE from `make test`, so this sub-make links
# nothing new: it installs the binary under test.
run make -C "$root" --no-print-directory install DESTDIR="$tmp/inst" PREFIX=/usr
expect "make install" 0
for f in usr/bin/gpuledger usr/share/man/man1/gpuledger.1 \
	usr/share/bash-completion/completions/gpuledger; do
	if [ -s "$tmp/inst/$f" ]; then ok; else bad "make install: no $f"; fi
done
for s in $subs; do
	page=$tmp/inst/usr/share/man/man1/gpuledger-$s.1
	if [ -s "$page" ] && sed 's/\\-/-/g' "$page" | grep -q "^gpuledger-$s - "; then ok
	else bad "no man page gpuledger-$s(1)"; fi
done
comp=$tmp/inst/usr/share/bash-completion/completions/gpuledger
# Man pages and completion are made from the parser's option tables
# (SUB --help-man, SUB --completion-helper): every page lints clean with
# mandoc and renders, with man -l, the sections NAME, SYNOPSIS,
# DESCRIPTION, OPTIONS (one item per option, --help and --version
# included), EXIT STATUS and SEE ALSO, in that order.
man1=$tmp/inst/usr/share/man/man1
for page in "$man1"/gpuledger.1 "$man1"/gpuledger-*.1; do
	name=$(basename "$page" .1)
	lint=$(mandoc -T lint -W warning "$page" 2>&1)
	[ -z "$lint" ] && ok || bad "$name(1): mandoc -T lint: $(echo "$lint" | head -3)"
	heads=$(MANWIDTH=80 man -l "$page" 2>/dev/null | sed -n 's/^\([A-Z][A-Z ]*\)$/\1/p' | tr '\n' ,)
	[ "$heads" = "NAME,SYNOPSIS,DESCRIPTION,OPTIONS,EXIT STATUS,SEE ALSO," ] && ok ||
		bad "$name(1): sections $heads"
done
complete_words() { # WORDS...: what completing the last word offers
	bash -c '. "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpuledger;
		echo "${COMPREPLY[*]}"' "$comp" "$@"
}
for s in $subs; do
	page=$man1/gpuledger-$s.1
	offered=$(complete_words gpuledger "$s" - | tr ' ' '\n' | sort)
	# Offered, then accepted: none is an unknown option.
	refused=
	for o in $offered; do
		case $o in --help | --version) continue ;; esac
		"$bin" "$s" "$o=1" --zz-no-such-option >/dev/null 2>"$tmp/err"
		grep -q "unknown option \"$o" "$tmp/err" && refused="$refused $o"
	done
	[ -z "$refused" ] && ok || bad "$s: completion offers refused options:$refused"
	[ "$(echo "$offered" | sort | uniq -d)" = "" ] && ok || bad "$s: completion offers an option twice"
	# Accepted, then offered: every option --help lists.
	listed=$( (sed -n 's/^  \(--[a-z][a-z0-9-]*\).*/\1/p' "$tmp/help.$s"; echo --help; echo --version) | sort -u)
	[ "$listed" = "$offered" ] && ok ||
		bad "$s: --help lists $(echo $listed), completion offers $(echo $offered)"
	# The man page: one OPTIONS item per offered option.
	items=$(sed -n '/^\.SH OPTIONS/,/^\.SH/p' "$page" | grep -A1 '^\.TP' |
		sed -n 's/^\\fB\(\\-\\-[a-z0-9\\-]*\)\\fR.*/\1/p' | sed 's/\\-/-/g' | sort)
	[ "$items" = "$offered" ] && ok ||
		bad "$s: gpuledger-$s(1) OPTIONS items $(echo $items), want $(echo $offered)"
done
# Every option in a table of tools/*.c is offered by some subcommand, but
# the aliases (OPT_ALIAS): those are accepted and not offered.
all=$(for s in $subs; do complete_words gpuledger "$s" -; done | tr ' ' '\n' | sort -u)
for o in $(grep -ohE '^\s*(OPT_DB\(|\{"--[a-z0-9-]+", OPT_)' "$root"/tools/*.c |
	sed -e 's/.*OPT_DB(/--db/' -e 's/.*{"\(--[a-z0-9-]*\)".*/\1/' | sort -u); do
	echo "$all" | grep -qx -- "$o" && ok || bad "option $o is in a table but never offered"
done
# One flag vocabulary (docs/api.md "Flag names"); the old spellings stay
# accepted, as deployed manifests and scripts use them, but are not offered.
while read -r s new old; do
	"$bin" "$s" "$old=1" --zz-no-such-option >/dev/null 2>"$tmp/err"
	grep -q "unknown option \"$old" "$tmp/err" && bad "$s: the alias $old is refused" || ok
	offered=$(complete_words gpuledger "$s" -)
	case " $offered " in *" $new "*) ok ;; *) bad "$s: $new not offered" ;; esac
	case " $offered " in *" $old "*) bad "$s: the alias $old is offered" ;; *) ok ;; esac
	sed 's/\\-/-/g; s/\\f[BIR]//g' "$man1/gpuledger-$s.1" | grep -q "Also spelled.*$old" && ok ||
		bad "gpuledger-$s(1) does not name the alias $old"
done <<'EOF'
replicate --server --from
replicate --tls-ca --cacert
replicate --tls-cert --cert
replicate --tls-key --key
witness --server --url
backup --out --to
EOF
# Every flag the manifests in deploy/ pass to gpuledger is accepted.
for o in $(grep -rhoE -- '"?--[a-z][a-z0-9-]+' "$root"/deploy/*.yaml "$root"/deploy/*/*.yaml 2>/dev/null |
	tr -d '"' | sort -u); do
	taken=
	for s in $subs; do
		"$bin" "$s" "$o=1" --zz-no-such-option >/dev/null 2>"$tmp/err"
		grep -q "unknown option \"$o" "$tmp/err" || { taken=$s; break; }
	done
	[ -n "$taken" ] && ok || bad "deploy/ uses $o, which no subcommand accepts"
done
# Value completion: the values of --format, --step, --basis, --rollup are
# offered, and each is accepted where a bogus one is refused.
got=$(complete_words gpuledger export --format "")
[ "$got" = "focus-csv ndjson opencost-csv" ] && ok || bad "export --format values: '$got'"
got=$(complete_words gpuledger export --step "")
[ "$got" = "hour day" ] && ok || bad "export --step values: '$got'"
got=$(complete_words gpuledger export --basis al)
[ "$got" = "allocated" ] && ok || bad "export --basis al: '$got'"
got=$(complete_words gpuledger prove --format "")
[ "$got" = "json c2sp" ] && ok || bad "prove --format values: '$got'"
got=$(complete_words gpuledger export --rates "$root/Makef")
[ "$got" = "$root/Makefile" ] && ok || bad "export --rates completes file names: '$got'"
"$bin" import --db "$tmp/vals" --create <"$root/tests/query/base.ndjson" >/dev/null
while read -r s base; do
	"$bin" "$s" --completion-helper | awk -F'\t' '$2 != ""' >"$tmp/vals.tsv"
	while IFS='	' read -r o vs; do
		"$bin" "$s" $base "$o" zz-bogus >/dev/null 2>"$tmp/bogus"
		for v in $vs; do
			"$bin" "$s" $base "$o" "$v" >/dev/null 2>"$tmp/err"
			sed "s/zz-bogus/$v/g" "$tmp/bogus" | cmp -s - "$tmp/err" &&
				bad "$s $o $v: offered but refused: $(cat "$tmp/err")" || ok
		done
	done <"$tmp/vals.tsv"
done <<EOF
export --db $tmp/vals --from 2026-03-01
prove --db $tmp/vals --seq 1
EOF
got=$(complete_words gpuledger repl)
[ "$got" = "replicate replay" ] && ok || bad "completion of 'gpuledger repl': '$got'"
got=$(complete_words gpuledger check-p)
[ "$got" = "check-proof" ] && ok || bad "completion of 'gpuledger check-p': '$got'"
got=$(complete_words gpuledger watch --metr)
[ "$got" = "--metrics-listen" ] && ok || bad "completion of 'watch --metr': '$got'"
got=$(complete_words gpuledger export --form)
[ "$got" = "--format" ] && ok || bad "completion of 'export --form': '$got'"

# ------------------------------------------------------ paths named once
mkdir -p "$tmp/empty"
extra() { [ "$1" = export ] && echo "--from 2026-01-01T00:00:00Z"; }
for s in verify replay export stats log audit; do
	for d in "$tmp/empty" "$tmp/missing"; do
		run "$bin" $s --db "$d" $(extra $s)
		expect "$s --db $(basename "$d")" 2
		n=$(grep -o "$d" "$tmp/err" | wc -l)
		[ "$n" -eq 1 ] && ok || bad "$s: the path is named $n times: $(cat "$tmp/err")"
	done
	run "$bin" $s --db "$tmp/empty" $(extra $s)
	has "$s: an empty directory is not a ledger" "$tmp/err" \
		"$s: $tmp/empty: not a gpuledger ledger"
	run "$bin" $s --db "$tmp/missing" $(extra $s)
	has "$s: a missing directory" "$tmp/err" "$s: $tmp/missing: No such file or directory"
done
if [ ! -e "$tmp/empty/data.mdb" ] && [ ! -e "$tmp/missing" ]; then ok; else
	bad "a refused path was changed"
fi

# ------------------------------------------------ serve and --create
run "$bin" serve --db "$tmp/empty" --listen 127.0.0.1:0
expect "serve on an empty directory" 2
has "serve names what is wrong" "$tmp/err" \
	"serve: $tmp/empty: not a gpuledger ledger \\(no data.mdb in it\\)"
if [ ! -e "$tmp/empty/data.mdb" ]; then ok; else bad "serve made a ledger without --create"; fi
start_serve "$tmp/serve.out" --db "$tmp/new" --create
has "serve --create starts" "$tmp/serve.out" '^listening on 127.0.0.1:[0-9]+'
kill -TERM $p 2>/dev/null
wait $p 2>/dev/null
if [ -f "$tmp/new/data.mdb" ]; then ok; else bad "serve --create made no ledger"; fi
run "$bin" verify --db "$tmp/new"
expect "the ledger serve --create made verifies" 0

# ------------------------------------- export formats, dates, parameters
db=$tmp/ledger
"$bin" import --db "$db" --create <"$root/tests/query/base.ndjson" >/dev/null
exp() { "$bin" export --db "$db" "$@"; }
exp --from 2026-03-01T00:00:00Z --format json >"$tmp/json" 2>&1
run exp --from 2026-03-01T00:00:00Z --format ndjson
expect "export --format ndjson" 0
same "--format json is an alias of ndjson" "$tmp/json" "$tmp/out"
[ -s "$tmp/out" ] && jq -e . "$tmp/out" >/dev/null && ok || bad "ndjson is JSON lines"
exp --from 2026-03-01T00:00:00Z --to 2026-03-02T00:00:00Z >"$tmp/rfc"
run exp --from 2026-03-01 --to 2026-03-02
expect "export with date-only times" 0
same "a date is its midnight UTC (export)" "$tmp/rfc" "$tmp/out"
run exp --from 2026-02-30
expect "export --from 2026-02-30" 2
has "a date that does not exist is refused" "$tmp/err" '--from "2026-02-30" is not an RFC 3339 time or a date'
run exp --from 2026-03-01 --format csv
has "an unknown format lists the names" "$tmp/err" 'expected focus-csv, ndjson \(or json\) or opencost-csv'
"$bin" replay --db "$db" --json --at 2026-03-02T00:00:00Z >"$tmp/rfc"
run "$bin" replay --db "$db" --json --at 2026-03-02
expect "replay --at DATE" 0
same "a date is its midnight UTC (replay)" "$tmp/rfc" "$tmp/out"

"$bin" simulate --seed 3 --events 200 --start 2026-01-01T00:00:00Z \
	--end 2026-01-02T00:00:00Z --out "$tmp/sim-rfc" 2>/dev/null
run "$bin" simulate --seed 3 --events 200 --start 2026-01-01 --end 2026-01-02 \
	--out "$tmp/sim-date"
expect "simulate with date-only times" 0
same "a date is its midnight UTC (simulate)" "$tmp/sim-rfc" "$tmp/sim-date"

start_serve "$tmp/serve2.out" --db "$db"
get() { # PATH?QUERY: status to $code, body to $tmp/body
	code=$(curl -s -o "$tmp/body" -w '%{http_code}' "http://127.0.0.1:$port$1")
}
refused() { # NAME QUERY MESSAGE-REGEX
	get "/v1/export?$2"
	if [ "$code" = 400 ] && jq -r .error "$tmp/body" | grep -Eq -- "$3"; then ok
	else bad "$1: $code $(head -c 200 "$tmp/body")"; fi
}
get "/v1/export?from=2026-03-01T00:00:00Z&format=ndjson"
cp "$tmp/body" "$tmp/http.ndjson"
[ "$code" = 200 ] && ok || bad "HTTP export format=ndjson: $code"
get "/v1/export?from=2026-03-01&format=json"
[ "$code" = 200 ] && cmp -s "$tmp/body" "$tmp/http.ndjson" && ok ||
	bad "HTTP export: from=DATE&format=json differs from the RFC 3339 ndjson ($code)"
refused "unknown parameter" "from=2026-03-01&form=ndjson" 'unknown parameter "form"'
refused "from missing" "to=2026-03-02" '^export: parameter from is required'
refused "bad from" "from=yesterday" '^export: parameter from "yesterday" is not an RFC 3339 time'
refused "bad to" "from=2026-03-01&to=2026-13-01" '^export: parameter to "2026-13-01" is not'
refused "to before from" "from=2026-03-02&to=2026-03-01" '^export: parameter to must be after from'
refused "bad step" "from=2026-03-01&step=week" '^export: parameter step "week": expected hour or day$'
refused "bad basis" "from=2026-03-01&basis=used" '^export: parameter basis "used": expected reserved or allocated$'
refused "bad format" "from=2026-03-01&format=xml" '^export: parameter format "xml": expected focus-csv or ndjson \(or json\)$'
refused "bad rollup" "from=2026-03-01&rollup=tree" '^export: parameter rollup "tree": expected subtree$'
refused "opencost-csv is the CLI's" "from=2026-03-01&format=opencost-csv" '^export: parameter format "opencost-csv": expected focus-csv or ndjson'
refused "month with from" "month=2026-03&from=2026-03-01" '^export: parameter month replaces from and to$'
refused "rates is the CLI's" "from=2026-03-01&rates=x" '^export: unknown parameter "rates" \(known: from, to, month, step, basis, format, rollup, currency, tenant, focusVersion\)$'
refused "a repeated parameter: the last counts" "from=2026-03-01&step=day&step=week" '^export: parameter step "week"'
refused "a value over its bound" "from=2026-03-01&step=$(printf '%040d' 0)" '^export: parameter step is too long \(at most 31 bytes\)$'
refused "a value that does not decode" "from=2026-03-01&basis=%zz" '^export: parameter basis is malformed or too long$'
get "/v1/state?at=2026-03-02"
[ "$code" = 200 ] && ok || bad "HTTP state?at=DATE: $code $(head -c 200 "$tmp/body")"
kill -TERM $p 2>/dev/null
wait $p 2>/dev/null

# ------------------------------------------- exit codes and errors (24.4)
run "$bin"
expect "gpuledger without a subcommand" 2
has "no subcommand: the subcommands are listed" "$tmp/err" '^  export  '
run "$bin" no-such-sub
expect "an unknown subcommand" 2
has "an unknown subcommand is named" "$tmp/err" 'unknown subcommand "no-such-sub"'
for s in $subs; do
	run "$bin" "$s" --zz-no-such-option
	expect "$s --zz-no-such-option" 2
	# The error, then one line pointing at --help: not the whole help.
	n=$(wc -l <"$tmp/err")
	if [ "$n" -eq 2 ] && grep -q "unknown option \"--zz-no-such-option\"" "$tmp/err" &&
		grep -qx "Try 'gpuledger $s --help' for its options." "$tmp/err"; then ok
	else bad "$s: an unknown option gives $n lines: $(head -c 200 "$tmp/err")"; fi
done
run "$bin" export --db "$db" --from
[ "$(wc -l <"$tmp/err")" -eq 2 ] && has "a missing value is named" "$tmp/err" '--from needs a value' ||
	bad "export --from (no value): $(head -c 200 "$tmp/err")"
run exp --from 2026-03-01 --rates "$tmp/no-such-rates.json"
expect "export --rates (missing file)" 2
has "a missing rates file is said plainly" "$tmp/err" \
	"^gpuledger: export: --rates $tmp/no-such-rates.json: cannot read it: No such file or directory\$"
run exp --from 2026-03-01 --rates "$tmp"
has "a directory is not a rates file" "$tmp/err" 'is a directory, not a billing file'
if grep -q 'line -1' "$tmp/err"; then bad "--rates: line -1"; else ok; fi

# A tenant token that asks for another tenant is told why: the subtree.
printf 'tenant-acme-token-01234 tenant:tenant-acme\n' >"$tmp/tokens"
chmod 600 "$tmp/tokens"
start_serve "$tmp/serve3.out" --db "$db" --token-file "$tmp/tokens"
for path in /v1/tenants/tenant-beta /v1/tenants/tenant-beta/remaining; do
	code=$(curl -s -o "$tmp/body" -w '%{http_code}' \
		-H 'Authorization: Bearer tenant-acme-token-01234' "http://127.0.0.1:$port$path")
	if [ "$code" = 403 ] && jq -r .error "$tmp/body" |
		grep -Eq 'tenant tenant-beta is outside the subtree of tenant-acme$'; then ok
	else bad "GET $path as tenant-acme: $code $(head -c 200 "$tmp/body")"; fi
done
code=$(curl -s -o "$tmp/body" -w '%{http_code}' \
	-H 'Authorization: Bearer tenant-acme-token-01234' "http://127.0.0.1:$port/v1/tenants/tenant-acme-dev")
[ "$code" = 200 ] && ok || bad "GET /v1/tenants/tenant-acme-dev as tenant-acme: $code"
kill -TERM $p 2>/dev/null
wait $p 2>/dev/null

# log --follow stops on SIGTERM, also as PID 1 of a PID namespace (a
# container), where the kernel gives SIGTERM no default action.
follow_stops() { # NAME PID1 CMD...: CMD runs log --follow; SIGTERM must end it
	name=$1
	pid1=$2
	shift 2
	"$@" >"$tmp/follow.out" 2>"$tmp/follow.err" &
	fp=$!
	wait_until 10 grep -q '"seq":1,' "$tmp/follow.out"
	# unshare --fork waits for its child: that child is PID 1 inside, and
	# the signal goes to it from here, as a container runtime sends it.
	target=$fp
	[ "$pid1" = no ] || target=$(cat /proc/$fp/task/$fp/children)
	kill -TERM $target 2>/dev/null
	i=0
	while kill -0 $fp 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	if kill -0 $fp 2>/dev/null; then
		bad "$name: log --follow ignored SIGTERM"
		kill -KILL $fp 2>/dev/null
	else ok; fi
	wait $fp 2>/dev/null
}
follow_stops "log --follow" no "$bin" log --db "$db" --follow
if [ "$(id -u)" -eq 0 ] && unshare --pid --fork true 2>/dev/null; then
	follow_stops "log --follow as PID 1" yes unshare --pid --fork \
		"$bin" log --db "$db" --follow
else
	echo "manners_cli: not root or no PID namespaces: log --follow as PID 1 not tested"
fi

echo "manners_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
