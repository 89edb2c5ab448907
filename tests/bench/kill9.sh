#!/bin/bash
# tests/bench/kill9.sh - how much of a run kill -9 loses: runs
# tests/e2e/progs/progress.c traced, kills it with SIGKILL after a random
# 0.2-2.2 s, and compares the program's last progress stamp with the time
# of the trace's last event (both measured from the first call). Prints one
# loss per run in ms, then the median and the maximum.
#
#   tests/bench/kill9.sh [RUNS]      (default 20; needs `make` first)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${HOOKPROF_BUILD:-$ROOT/build}
RUNS=${1:-20}
T=$(mktemp -d "${TMPDIR:-/tmp}/hookprof-kill9.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
gcc -finstrument-functions -g -O1 "$ROOT/tests/e2e/progs/progress.c" -o "$T/progress" || exit 1
for i in $(seq "$RUNS"); do
	rm -f "$T"/k.hookprof* "$T/stamp"
	HOOKPROF_OUTPUT=$T/k.hookprof LD_PRELOAD=$BUILD/libhookprof.so "$T/progress" "$T/stamp" &
	pid=$!
	sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.3f", 0.2 + r / 32768 * 2 }')"
	kill -9 $pid
	wait $pid 2>/dev/null
	read -r first last <"$T/stamp"
	# dump: "tid time_ns enter|exit function", times from the first event (main's enter)
	ev=$("$BUILD/hookprof" dump --partial "$T/k.hookprof" 2>/dev/null | awk 'NR > 1 && $2 > m { m = $2 } END { print m + 0 }')
	awk -v f="$first" -v l="$last" -v e="$ev" 'BEGIN { printf "%.1f\n", ((l - f) - e) / 1e6 }'
done | sort -n | awk '{ v[NR] = $1; printf "%s ms\n", $1 } END { printf "median %s ms, max %s ms over %d runs\n", v[int((NR + 1) / 2)], v[NR], NR }'
