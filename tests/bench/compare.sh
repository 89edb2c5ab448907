#!/bin/bash
# compare.sh LIB_A LIB_B [REPS] - two builds of libhookprof.so side by side:
# each bench program under no-op hooks, LIB_A and LIB_B, alternating, REPS
# times (default 7); the fastest wall and CPU seconds of each, and each
# library's seconds above the no-op hooks. A benchmark, never a test.
# Example: the library before a change against this one,
#   git worktree add /tmp/before OLDCOMMIT && make -C /tmp/before build/libhookprof.so
#   tests/bench/compare.sh /tmp/before/build/libhookprof.so build/libhookprof.so
set -u
[ $# -ge 2 ] || { echo "usage: $0 LIB_A LIB_B [REPS]" >&2; exit 2; }
A=$1 B=$2 reps=${3:-7}
here=$(cd "$(dirname "$0")" && pwd)
b=$(mktemp -d "${TMPDIR:-/tmp}/hookprof-compare.XXXXXX") || exit 1
trap 'rm -rf "$b"' EXIT
cc=${CC:-cc}
cxx=${CXX:-c++}
"$cc" -O2 "$here/runstat.c" -o "$b/runstat" || exit 1
for p in fib leaf threads8; do "$cc" -finstrument-functions -O2 -pthread "$here/progs/$p.c" -o "$b/$p" || exit 1; done
"$cxx" -finstrument-functions -O2 "$here/progs/cxx.cpp" -o "$b/cxx" || exit 1
printf 'void __cyg_profile_func_enter(void *a, void *b) {}\nvoid __cyg_profile_func_exit(void *a, void *b) {}\n' >"$b/noop.c"
"$cc" -O2 -fPIC -shared "$b/noop.c" -o "$b/noop.so" || exit 1
for p in fib leaf cxx threads8; do
	for ((r = 1; r <= reps; r++)); do
		for which in noop A B; do
			case $which in noop) lib=$b/noop.so ;; A) lib=$A ;; B) lib=$B ;; esac
			rm -f "$b/trace.hookprof"*
			HOOKPROF_OUTPUT=$b/trace.hookprof "$b/runstat" -q -o "$b/stat" -- env LD_PRELOAD="$lib" "$b/$p"
			echo "$p $which $(cat "$b/stat")"
		done
	done
done | awk '
	{ k = $1 SUBSEP $2; if (!(k in W) || $3 < W[k]) W[k] = $3; if (!(k in C) || $4 < C[k]) C[k] = $4; P[$1] = 1 }
	END {
		printf "%-9s %8s %8s %8s   %s\n", "program", "noop s", "A s", "B s", "above no-op, A / B: wall (cpu)"
		for (p in P)
			printf "%-9s %8.3f %8.3f %8.3f   %.3f / %.3f (%.3f / %.3f)\n", p, W[p, "noop"], W[p, "A"], W[p, "B"],
				W[p, "A"] - W[p, "noop"], W[p, "B"] - W[p, "noop"], C[p, "A"] - C[p, "noop"], C[p, "B"] - C[p, "noop"]
	}'
exit 0
