#!/bin/sh
# Holds in a cluster (DESIGN 3.7, 11) without the sequencer: every member
# judges its own verdicts (--no-forward), so that 60 admissions of 1 at
# once into 10 left are exactly 10 allowed only because a conflict over a
# VERDICT that made or replaced a hold is judged again, never re-numbered.
# tests/cluster_doors_cli.sh in DOORS_MODE=judge (the same members, the
# same promise).
# Usage: tests/cluster_holds_cli.sh [PATH/TO/gpuledger]
DOORS_MODE=judge exec sh "$(dirname "$0")/cluster_doors_cli.sh" "$@"
