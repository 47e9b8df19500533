#!/bin/sh
# Checks the layering of DESIGN.md section 1 and STYLE.md by reading #include
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
	tools) echo "model sim ledger ingest query tools" ;;
	esac
}
for layer in model sim ledger ingest query tools; do
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
	for layer in model sim ledger ingest query tools; do
		case " $* " in *" $layer "*) continue ;; esac
		[ -d "$layer" ] || continue
		if grep -ln "#include <$pat" "$layer"/*.c "$layer"/*.h 2>/dev/null; then
			echo "layercheck: <$pat> used outside $*"
			echo x >>"${TMPDIR:-/tmp}/layercheck.$$"
		fi
	done
}
check_foreign 'lmdb.h' ledger
check_foreign 'curl/' ingest
check_foreign 'uv.h' query tools
check_foreign 'openssl/ssl.h' query
if [ -f "${TMPDIR:-/tmp}/layercheck.$$" ]; then
	rm -f "${TMPDIR:-/tmp}/layercheck.$$"
	fail=1
fi
[ $fail -eq 0 ] && echo "layercheck: ok"
exit $fail
