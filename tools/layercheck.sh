#!/bin/sh
# Checks the layering of DESIGN.md section 1 and STYLE.md (cluster/, DESIGN
# 11, sits above ingest/, query/ and etcd/, the etcd client, and below
# tools/) by reading #include
# lines: a layer includes only itself and the layers below it, and foreign
# library types stay in the layer that owns them.
set -u
fail=0
allowed() { # layer -> allowed project include prefixes
	case "$1" in
	model) echo "model" ;;
	sim) echo "model sim" ;;
	ledger) echo "model ledger" ;;
	ingest) echo "model ledger ingest" ;;
	query) echo "model ledger query" ;;
	etcd) echo "model etcd" ;;
	cluster) echo "model ledger ingest query etcd cluster" ;;
	tools) echo "model sim ledger ingest query etcd cluster tools" ;;
	esac
}
for layer in model sim ledger ingest query etcd cluster tools; do
	[ -d "$layer" ] || continue
	ok=$(allowed "$layer")
	for f in "$layer"/*.c "$layer"/*.h; do
		[ -f "$f" ] || continue
		grep -n '^#include "' "$f" | while IFS= read -r line; do
			inc=$(echo "$line" | sed 's/.*#include "\([^"]*\)".*/\1/')
			top=${inc%%/*}
			[ "$top" = "$inc" ] && top=$layer
			case " $ok " in
			*" $top "*) ;;
			*) echo "layercheck: $f: includes $inc (layer $top)"; echo x >>"${TMPDIR:-/tmp}/layercheck.$$" ;;
			esac
		done
	done
done
# Foreign types stay home.
check_foreign() { # header pattern, allowed layers
	pat=$1; shift
	for layer in model sim ledger ingest query etcd cluster tools; do
		case " $* " in *" $layer "*) continue ;; esac
		[ -d "$layer" ] || continue
		if grep -ln "#include <$pat" "$layer"/*.c "$layer"/*.h 2>/dev/null; then
			echo "layercheck: <$pat> used outside $*"
			echo x >>"${TMPDIR:-/tmp}/layercheck.$$"
		fi
	done
}
check_foreign 'lmdb.h' ledger
# The Kubernetes client (ingest/), the etcd client (etcd/) and a door's
# forward to the sequencer (cluster/forward.c), nowhere else.
check_foreign 'curl/' ingest etcd cluster
check_foreign 'uv.h' query tools
check_foreign 'openssl/ssl.h' query
# Names (STYLE "Names"; ISSUE 15), read from the objects of the build in $1
# (default build/rel; `make layercheck` builds them first):
#  1. every external symbol a library module m defines is declared in its
#     public header m/m.h or carries the module's internal prefix m__
#     (libuv's uv__ style): a cross-file internal never looks public. A
#     function counts as declared only where the header applies its name
#     like a function ("name ("), a variable in an extern declaration: a
#     struct, enum or macro of the same name declares nothing;
#  2. a public header declares only functions that another layer or tools/
#     calls (an undefined symbol of their objects; tests/ do not count).
build=${1:-build/rel}
names=$(mktemp -d "${TMPDIR:-/tmp}/layercheck-names.XXXXXX")
# The names a header applies like a function: "name (" outside comments.
called_ids() {
	cc -x c -fpreprocessed -dD -E -P "$1" 2>/dev/null |
		grep -o '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*(' |
		sed 's/[[:space:]]*($//' | sort -u
}
# The names of a header's extern declarations (its public variables).
extern_ids() {
	cc -x c -fpreprocessed -dD -E -P "$1" 2>/dev/null |
		grep '^[[:space:]]*extern[[:space:]]' |
		grep -o '[A-Za-z_][A-Za-z0-9_]*' | sort -u
}
# A module's public headers: m/m.h and the headers of m/ it includes (its
# parts: model/base.h, model/jcs.h, model/tlog.h), never an m_int.h.
pub_headers() {
	echo "$1/$1.h"
	sed -n "s|^#include \"\($1/[a-z0-9_]*\.h\)\".*|\1|p" "$1/$1.h" |
		grep -v '_int\.h$'
}
# The objects of a folder's sources (its .c files and those the build
# generates there); a stale object of a removed file does not count.
objs() {
	for o in "$build/$1"/*.o; do
		b=${o%.o}
		b=${b##*/}
		[ -f "$1/$b.c" ] || [ -f "$build/$1/$b.c" ] || continue
		echo "$o"
	done
}
for m in model sim ledger ingest query etcd cluster; do
	ls "$m"/*.c >/dev/null 2>&1 || continue
	if [ -z "$(objs "$m")" ]; then
		echo "layercheck: no objects of $m/ in $build (build first)"
		echo x >>"${TMPDIR:-/tmp}/layercheck.$$"
		continue
	fi
	for h in $(pub_headers "$m"); do extern_ids "$h"; done | sort -u >"$names/ids"
	for h in $(pub_headers "$m"); do called_ids "$h"; done | sort -u >"$names/calls"
	# "symbol object kind" for every external symbol m defines (kind: fn
	# for code, var for data).
	nm -A -g --defined-only $(objs "$m") |
		awk 'NF == 3 { f = $1; sub(/:.*/, "", f); sub(/.*\//, "", f);
			k = $2 ~ /^[TtWi]$/ ? "fn" : "var";
			print $3, f, k }' | sort -u >"$names/defs"
	# Names with a leading "__" are the implementation's (the sanitizers'
	# __odr_asan.* twins of globals): not ours to name.
	awk '$1 !~ /^__/ { print $1 }' "$names/defs" | sort -u >"$names/syms"
	# What m/m.h declares: its functions by application, its variables
	# by name.
	{
		awk '$1 !~ /^__/ && $3 == "fn" { print $1 }' "$names/defs" |
			sort -u | comm -12 - "$names/calls"
		awk '$1 !~ /^__/ && $3 == "var" { print $1 }' "$names/defs" |
			sort -u | comm -12 - "$names/ids"
	} | sort -u >"$names/pub"
	comm -23 "$names/syms" "$names/pub" | grep -v "^${m}__" |
		while read -r sym; do
			obj=$(awk -v s="$sym" '$1 == s { print $2; exit }' \
				"$names/defs")
			echo "layercheck: $m: $sym ($obj) is not in $m/$m.h:" \
				"name it ${m}__* (internal) or declare it there"
			echo x >>"${TMPDIR:-/tmp}/layercheck.$$"
		done
	# Functions of m/m.h (names it applies that m defines) and their users.
	for h in $(pub_headers "$m"); do called_ids "$h"; done | sort -u |
		comm -12 - "$names/syms" >"$names/fns"
	for l in model sim ledger ingest query etcd cluster tools; do
		[ "$l" = "$m" ] || objs "$l"
	done | while read -r o; do nm -u "$o"; done 2>/dev/null |
		awk '{ print $NF }' | sort -u >"$names/used"
	comm -23 "$names/fns" "$names/used" | while read -r fn; do
		echo "layercheck: $m/$m.h declares $fn, which no other layer" \
			"calls: move it to $m/${m}_int.h"
		echo x >>"${TMPDIR:-/tmp}/layercheck.$$"
	done
done
rm -rf "$names"
if [ -f "${TMPDIR:-/tmp}/layercheck.$$" ]; then
	rm -f "${TMPDIR:-/tmp}/layercheck.$$"
	fail=1
fi
[ $fail -eq 0 ] && echo "layercheck: ok"
exit $fail
