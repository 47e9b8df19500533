#!/bin/sh
# Man pages from --help (Debian's help2man): gpuledger(1) from
# `gpuledger --help` and gpuledger-SUB(1) from `gpuledger SUB --help` for
# every subcommand that `gpuledger --help` lists, so they cannot drift from
# the binary. `make man` and `make install` run it.
# Usage: tools/manpages.sh PATH/TO/gpuledger OUTDIR
set -eu
bin=$1
out=$2
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
if ! command -v help2man >/dev/null 2>&1; then
	echo "manpages: help2man not found (tools/install-deps.sh installs it)" >&2
	exit 1
fi
mkdir -p "$out"
ver=$("$bin" --version)
subs=$("$bin" --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p')
help2man --no-info --no-discard-stderr --version-string="$ver" \
	--name="an event-sourced ledger of GPU budgets for Kubernetes tenants" \
	--output="$out/gpuledger.1" "$bin"
for s in $subs; do
	summary=$("$bin" --help | sed -n "s/^  $s  *//p")
	# help2man runs PROGRAM --help and PROGRAM --version through the shell.
	help2man --no-info --no-discard-stderr --version-string="$ver" \
		--name="$summary" --output="$out/gpuledger-$s.1" "$bin $s"
	# The page is gpuledger-SUB(1), not a second gpuledger(1).
	up=$(printf '%s' "$s" | tr a-z A-Z)
	sed -i -e "s/^\.TH GPULEDGER /.TH GPULEDGER-$up /" \
		-e "s/^gpuledger \\\\- /gpuledger-$s \\\\- /" "$out/gpuledger-$s.1"
done
