#!/bin/bash
# compare.sh LIB_A LIB_B [REPS] - two builds of libhookprof.so side by side:
# each bench program under no-op hooks, the floor, LIB_A and LIB_B,
# alternating, REPS times (default 7); the fastest wall and CPU seconds of
# each, each library's seconds above the no-op hooks and its ratio to the
# floor's (the targets' measure), and its peak RSS over the no-op run's
# (the smallest of the runs).
# A benchmark, never a test.
# Example: the library before a change against this one,
#   git worktree add /tmp/before OLDCOMMIT && make -C /tmp/before build/libhookprof.so
#   tests/bench/compare.sh /tmp/before/build/libhookprof.so build/libhookprof.so
# Environment: COMPARE_PROGS="fib ..." (default: every bench program; zlib's
# minigzip and Lua when sources.sh can fetch them), COMPARE_ENV_A,
# COMPARE_ENV_B="VAR=VALUE ..." (settings for one side only, e.g. the same
# library with two HOOKPROF_BUFFER sizes).
set -u
[ $# -ge 2 ] || { echo "usage: $0 LIB_A LIB_B [REPS]" >&2; exit 2; }
A=$1 B=$2 reps=${3:-7}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
b=$(mktemp -d "${TMPDIR:-/tmp}/hookprof-compare.XXXXXX") || exit 1
trap 'rm -rf "$b"' EXIT
cc=${CC:-cc}
cxx=${CXX:-c++}
. "$here/sources.sh"
"$cc" -O2 "$here/runstat.c" -o "$b/runstat" || exit 1
"$cc" -O2 -fno-instrument-functions -fPIC -shared "$here/floor.c" -o "$b/floor.so" || exit 1
for p in fib leaf threads8; do "$cc" -finstrument-functions -O2 -pthread "$here/progs/$p.c" -o "$b/$p" || exit 1; done
"$cc" -finstrument-functions -O2 -pthread -DNTHREADS=64 -DFIB_N=26 "$here/progs/threads8.c" -o "$b/threads64" || exit 1
"$cxx" -finstrument-functions -O2 "$here/progs/cxx.cpp" -o "$b/cxx" || exit 1
printf 'void __cyg_profile_func_enter(void *a, void *b) {}\nvoid __cyg_profile_func_exit(void *a, void *b) {}\n' >"$b/noop.c"
"$cc" -O2 -fPIC -shared "$b/noop.c" -o "$b/noop.so" || exit 1
progs=(${COMPARE_PROGS:-fib leaf cxx threads8 threads64 minigzip lua})
declare -A args=([lua]="$here/progs/bench.lua")
minigzip_input "$b/input.txt"
for p in minigzip lua; do
	case " ${progs[*]} " in *" $p "*) "build_$p" "$b/$p" -finstrument-functions -O2 ||
		echo "compare: cannot build $p: left out" >&2 ;; esac
done
for p in "${progs[@]}"; do
	[ -x "$b/$p" ] || continue
	in=/dev/null
	[ "$p" = minigzip ] && in=$b/input.txt
	for ((r = 1; r <= reps; r++)); do
		for which in noop floor A B; do
			vars=()
			case $which in
			noop) lib=$b/noop.so ;; floor) lib=$b/floor.so ;;
			A) lib=$A vars=(${COMPARE_ENV_A:-}) ;; B) lib=$B vars=(${COMPARE_ENV_B:-}) ;;
			esac
			rm -f "$b/trace.hookprof"*
			HOOKPROF_OUTPUT=$b/trace.hookprof "$b/runstat" -q -i "$in" -o "$b/stat" -- \
				env LD_PRELOAD="$lib" "${vars[@]}" "$b/$p" ${args[$p]:-}
			echo "$p $which $(cat "$b/stat")"
		done
	done
done | awk '
	function rss_up(p, w) { return (R[p, w] - R[p, "noop"]) / 1024 }
	function ratio(p, w, X) { return X[p, "floor"] > X[p, "noop"] ? (X[p, w] - X[p, "noop"]) / (X[p, "floor"] - X[p, "noop"]) : 0 }
	{
		k = $1 SUBSEP $2
		if (!(k in W) || $3 < W[k]) W[k] = $3
		if (!(k in C) || $4 < C[k]) C[k] = $4
		if (!(k in R) || $5 < R[k]) R[k] = $5
		if (!($1 in P)) order[++np] = $1
		P[$1] = 1
	}
	END {
		printf "%-9s %7s %7s %7s %7s   %-27s %-23s %s\n", "program", "noop s", "floor s", "A s", "B s",
			"above no-op A / B: wall (cpu)", "vs floor A / B: wall (cpu)", "RSS over no-op MiB A / B"
		for (i = 1; i <= np; i++) {
			p = order[i]
			printf "%-9s %7.3f %7.3f %7.3f %7.3f   %.3f / %.3f (%.3f / %.3f)   %.2f / %.2f (%.2f / %.2f)   %+.1f / %+.1f\n",
				p, W[p, "noop"], W[p, "floor"], W[p, "A"], W[p, "B"],
				W[p, "A"] - W[p, "noop"], W[p, "B"] - W[p, "noop"], C[p, "A"] - C[p, "noop"], C[p, "B"] - C[p, "noop"],
				ratio(p, "A", W), ratio(p, "B", W), ratio(p, "A", C), ratio(p, "B", C), rss_up(p, "A"), rss_up(p, "B")
		}
	}'
exit 0
