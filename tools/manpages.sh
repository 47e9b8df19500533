#!/bin/sh
# Man pages from the option tables the parser reads: gpuledger(1) from
# `gpuledger --help-man` and gpuledger-SUB(1) from `gpuledger SUB
# --help-man` for every subcommand that `gpuledger --help` lists (NAME,
# SYNOPSIS, DESCRIPTION, OPTIONS with one item per option, EXIT STATUS, SEE
# ALSO), so that they cannot drift from the binary. The date is the
# commit's (the build's, reproducibly), else today. `make man` and `make
# install` run it; tests/manners_cli.sh lints them with mandoc.
# Usage: tools/manpages.sh PATH/TO/gpuledger OUTDIR
set -eu
bin=$1
out=$2
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
mkdir -p "$out"
day=$(git -C "$(dirname "$0")" log -1 --format=%cs 2>/dev/null || date -u +%F)
page() { # OUTFILE ARGS...: the page gpuledger ARGS --help-man writes
	f=$1
	shift
	"$bin" "$@" --help-man | sed "1s/^\(\.TH [^ ]* 1\) \"\"/\1 \"$day\"/" >"$f.tmp"
	mv "$f.tmp" "$f"
}
page "$out/gpuledger.1"
for s in $("$bin" --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p'); do
	page "$out/gpuledger-$s.1" "$s"
done
