#!/bin/sh
# `make flavourcheck` (CI runs it after both test runs, when both flavours
# are built, so it only copies and links nothing): ./gpuledger follows the
# flavour of the last make. After a SANITIZE build it is the sanitizer
# binary; after a plain `make` it must be the plain one again (it used to
# be left as the ASan binary, "up to date"), and `make install` installs the
# plain one.
set -u
SAN=${SANITIZE_FLAVOUR:-address,undefined}
MAKE=${MAKE:-make}
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "flavour_check: FAIL: $*"; }
asan() { nm "$1" 2>/dev/null | grep -c '__asan_' ; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

$MAKE --no-print-directory SANITIZE="$SAN" gpuledger >"$tmp/san.log" 2>&1 ||
	{ cat "$tmp/san.log"; bad "make SANITIZE=$SAN failed"; }
n=$(asan ./gpuledger)
[ "$n" -gt 0 ] && ok || bad "after SANITIZE=$SAN ./gpuledger has no __asan_ symbols"
cmp -s ./gpuledger build/san/gpuledger && ok || bad "./gpuledger is not build/san/gpuledger"

$MAKE --no-print-directory >"$tmp/rel.log" 2>&1 ||
	{ cat "$tmp/rel.log"; bad "plain make failed"; }
n=$(asan ./gpuledger)
[ "$n" -eq 0 ] && ok || bad "after a plain make ./gpuledger still has $n __asan_ symbols"
cmp -s ./gpuledger build/rel/gpuledger && ok || bad "./gpuledger is not build/rel/gpuledger"
./gpuledger version >/dev/null && ok || bad "./gpuledger version failed"

# A second plain make has nothing to copy.
$MAKE --no-print-directory >"$tmp/again.log" 2>&1 || bad "second make failed"
grep -q '^gpuledger: ' "$tmp/again.log" && bad "second make copied again" || ok

# make install, after a SANITIZE build, installs the plain binary.
$MAKE --no-print-directory SANITIZE="$SAN" gpuledger >/dev/null 2>&1
$MAKE --no-print-directory install DESTDIR="$tmp/root" PREFIX=/usr >"$tmp/inst.log" 2>&1 ||
	{ cat "$tmp/inst.log"; bad "make install failed"; }
if [ -x "$tmp/root/usr/bin/gpuledger" ]; then
	n=$(asan "$tmp/root/usr/bin/gpuledger")
	[ "$n" -eq 0 ] && ok || bad "make install installed a binary with $n __asan_ symbols"
else
	bad "make install installed no binary"
fi
ls "$tmp/root/usr/share/man/man1/"*.1 >/dev/null 2>&1 && ok || bad "no man pages installed"

echo "flavour_check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
