#!/bin/bash
# fidelity.sh - how well hookprof's times describe the program: each bench
# program's top functions by self time, their share as perf sampling sees it
# in a build without instrumentation (the truth, as near as we have it), and
# as hookprof reports it, as measured (--raw) and compensated (the default).
# Also main's total against the uninstrumented run's wall time.
#
# A benchmark, never a test: it prints figures and exits 0. Run by
# `make bench` after bench.sh; by hand: tests/bench/fidelity.sh [PROG...]
# Environment: FIDELITY_RUNS=N (default 3; shares are the median of the
# runs), CC, CXX, TMPDIR.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BENCH_BUILD:-$root/build}
hookprof=$build/hookprof
lib=$build/libhookprof.so
cc=${CC:-cc}
cxx=${CXX:-c++}
runs=${FIDELITY_RUNS:-3}
case $runs in '' | *[!0-9]* | 0) runs=3 ;; esac
progs=("$@")
[ ${#progs[@]} -gt 0 ] || progs=(synth leaf cxx fib threads8 minigzip lua)
# The same code in both builds: nothing inlined that the hooks would keep
# out of line anyway, and no call turned into a jump or a loop (an exit hook
# after each call forbids that: fib's second call would become a loop in
# the plain build only, which then made half the calls).
flags=(-O2 -g -fno-inline -fno-optimize-sibling-calls -pthread)
declare -A args=([synth]=40 [leaf]="" [cxx]="" [fib]=32 [threads8]="" [minigzip]="" [lua]="$here/progs/bench.lua")

note() { printf 'fidelity: %s\n' "$*" >&2; }
if ! command -v perf >/dev/null 2>&1 || [ ! -x "$hookprof" ] || [ ! -r "$lib" ]; then
	note "needs perf, $hookprof and $lib: left out"
	exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/hookprof-fidelity.XXXXXX") || exit 0
trap 'rm -rf "$work"' EXIT
. "$here/sources.sh"

# build PROG: $work/PROG.plain and $work/PROG.hooks
build() {
	local p=$1 src=$here/progs/$1.c comp=$cc
	case $p in
	minigzip | lua)
		minigzip_input "$work/input.txt"
		"build_$p" "$work/$p.plain" "${flags[@]}" &&
			"build_$p" "$work/$p.hooks" "${flags[@]}" -finstrument-functions
		return ;;
	esac
	[ -r "$src" ] || { src=$here/progs/$1.cpp; comp=$cxx; }
	"$comp" "${flags[@]}" "$src" -o "$work/$p.plain" &&
		"$comp" "${flags[@]}" -finstrument-functions "$src" -o "$work/$p.hooks"
}

# run PROG BUILD [ENV...]: one run in $work under ${wrap[@]}, output to
# /dev/null (minigzip compresses the input text).
wrap=()
run() {
	local p=$1 b=$2 in=/dev/null
	shift 2
	[ "$p" = minigzip ] && in=input.txt
	(cd "$work" && env "$@" "${wrap[@]}" "./$p.$b" ${args[$p]} <"$in" >/dev/null 2>&1)
}

# NAME SHARE lines of the program's own functions, shares in % of their sum.
# Names lose their parameter lists so that both tools' names meet. A
# function in skip[PROG] is left out of both: threads8's main waits in
# pthread_join, wall-clock self time to hookprof and no CPU samples to perf.
declare -A skip=([threads8]='^main$')
normalize() { # PROG
	awk -F'\t' -v skip="${skip[$1]:-}" '{ sub(/\(.*/, "", $1) }
		skip != "" && $1 ~ skip { next }
		{ v[$1] += $2; sum += $2 }
		END { for (f in v) if (sum > 0) printf "%s\t%.2f\n", f, 100 * v[f] / sum }'
}
perf_shares() { # PROG RUN BUILD [ENV...]: shares of the program's own code
	local p=$1 b=$3 data=$work/$1.$2.$3.perf
	wrap=(perf record -q -e cpu-clock -F 10000 -o "$data")
	run "$p" "$b" "${@:4}"
	local rc=$?
	wrap=()
	[ $rc = 0 ] || return 1
	perf report -i "$data" --stdio --no-children --sort dso,sym 2>/dev/null |
		awk -v dso="$p.$b" '$1 ~ /%$/ && $2 == dso && $3 == "[.]" {
			pct = $1; sub(/%/, "", pct); $1 = $2 = $3 = ""; sub(/^ +/, "")
			if ($0 !~ /@plt$/) print $0 "\t" pct }' | # calls into the hooks: not the program
		normalize "$p"
}
hookprof_shares() { # PROG TAG [ENV...]: raw and compensated, as TAG.raw/.comp/.main files
	local p=$1 tr=$work/$1.$2.hookprof
	run "$p" hooks HOOKPROF_OUTPUT="$tr" LD_PRELOAD="$lib" "${@:3}" || return 1
	local opt
	for opt in raw comp; do
		"$hookprof" report --format=csv $([ $opt = raw ] && echo --raw) "$tr" 2>/dev/null |
			awk -v dso="$p.hooks" -F, 'NR > 1 && $(NF-1) == dso {
				self = $(NF-5); name = $1; for (i = 2; i <= NF - 8; i++) name = name "," $i
				gsub(/"/, "", name); print name "\t" self }' | normalize "$p" >"$work/$p.$2.$opt"
		[ $opt = comp ] && "$hookprof" report --format=csv "$tr" 2>/dev/null |
			awk -F, '$1 == "main" { print $(NF-6) }' >"$work/$p.$2.main"
	done
	rm -f "$tr"
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
share_of() { awk -F'\t' -v f="$2" '$1 == f { print $2 }' "$1"; }

declare -A plain_of
printf '\n== fidelity: share of self time (%%), perf sampling of an uninstrumented build vs hookprof, median of %s runs\n' "$runs"
printf '(noop, on: perf sampling of the instrumented build, with empty hooks and with hookprof: what\n'
printf ' the hooks change in the program'"'"'s own code, which no compensation can take out)\n'
printf '%-9s %-34s %7s %7s %7s %7s %7s %9s\n' program function perf noop on raw comp "comp-perf"
for p in "${progs[@]}"; do
	build "$p" || { note "$p: cannot build"; continue; }
	plain_ns=() noop_ns=()
	for ((r = 1; r <= runs; r++)); do
		t0=$(date +%s%N)
		run "$p" plain
		t1=$(date +%s%N)
		run "$p" hooks # glibc's empty hooks
		plain_ns+=($((t1 - t0)))
		noop_ns+=($(($(date +%s%N) - t1)))
		perf_shares "$p" "$r" plain >"$work/$p.$r.perf.txt" || note "$p: perf failed"
		# the instrumented build under perf, with glibc's empty hooks and
		# with hookprof's: what the hooks change in the program's own code
		perf_shares "$p" "$r" hooks >"$work/$p.$r.noop" || note "$p: perf failed"
		perf_shares "$p" "$r" hooks HOOKPROF_OUTPUT="$work/perf.hookprof" LD_PRELOAD="$lib" \
			>"$work/$p.$r.on" || note "$p: perf failed"
		rm -f "$work/perf.hookprof"
		hookprof_shares "$p" "$r" || note "$p: hookprof failed"
	done
	# the top 6 functions by perf's median share
	for f in $(cat "$work/$p".*.perf.txt | cut -f1 | sort -u); do
		printf '%s\t%s\n' "$f" "$(for ((r = 1; r <= runs; r++)); do share_of "$work/$p.$r.perf.txt" "$f"; done | median)"
	done | sort -t$'\t' -k2,2gr | head -n 6 >"$work/$p.top"
	while IFS=$'\t' read -r f perf_share; do
		for k in noop on raw comp; do
			printf -v "$k" '%s' "$(for ((r = 1; r <= runs; r++)); do share_of "$work/$p.$r.$k" "$f"; done | median)"
		done
		printf '%-9s %-34.34s %7.2f %7.2f %7.2f %7.2f %7.2f %+9.2f\n' "$p" "$f" "$perf_share" "${noop:-0}" \
			"${on:-0}" "${raw:-0}" "${comp:-0}" "$(awk -v a="${comp:-0}" -v b="$perf_share" 'BEGIN { print a - b }')"
	done <"$work/$p.top"
	plain=$(printf '%s\n' "${plain_ns[@]}" | median)
	noop=$(printf '%s\n' "${noop_ns[@]}" | median)
	plain_of[$p]=$plain
	main=$(cat "$work/$p".*.main 2>/dev/null | median)
	[ -n "${skip[$p]:-}" ] && main= # its main waits: its total is the run's wall time
	[ -n "$main" ] && [ -n "$plain" ] &&
		printf '%-9s %-34s %7.1f ms (uninstrumented run %.1f ms: %+.1f%%; with empty hooks %.1f ms: %+.1f%%)\n' \
			"$p" "main's total, compensated" "$(awk -v m="$main" 'BEGIN { print m / 1e6 }')" \
			"$(awk -v m="$plain" 'BEGIN { print m / 1e6 }')" \
			"$(awk -v m="$main" -v u="$plain" 'BEGIN { print 100 * (m - u) / u }')" \
			"$(awk -v m="$noop" 'BEGIN { print m / 1e6 }')" \
			"$(awk -v m="$main" -v u="$noop" 'BEGIN { print 100 * (m - u) / u }')"
done
# ---- where the rest comes from -------------------------------------------
# The same measurement with the writer kept off the program's way (ring
# mode: nothing is written until the exit, and the shares are of the last
# 8 MiB of events, which wrap over and over: a buffer holding the whole run
# would add its first-touch page faults instead) and with the writer on the
# program's own core (taskset -c 0); and
# for leaf, the calls of leaf excluded (HOOKPROF_EXCLUDE): their hooks
# still run, and what they cost stays in middle. FIDELITY_SOURCES=0 leaves
# it out.
[ "${FIDELITY_SOURCES:-1}" = 0 ] && exit 0
printf '\n== fidelity: where the rest comes from (compensated shares, %%, and main'"'"'s total against the uninstrumented run)\n'
printf '%-9s %-28s %-34s %7s %7s\n' program variant function perf comp
variant() { # PROG TAG NAME [ENV...]: one line per top function, one for main
	local p=$1 tag=$2 name=$3 f perf_share comp main
	for ((r = 1; r <= runs; r++)); do
		hookprof_shares "$p" "$tag.$r" "${@:4}" || note "$p: hookprof failed ($name)"
	done
	wrap=()
	head -n 2 "$work/$p.top" | while IFS=$'\t' read -r f perf_share; do
		comp=$(for ((r = 1; r <= runs; r++)); do share_of "$work/$p.$tag.$r.comp" "$f"; done | median)
		printf '%-9s %-28s %-34.34s %7.2f %7.2f\n' "$p" "$name" "$f" "$perf_share" "${comp:-0}"
	done
	main=$(cat "$work/$p.$tag".*.main 2>/dev/null | median)
	[ "$tag" != ring ] && [ -n "$main" ] && [ -n "${plain_of[$p]:-}" ] &&
		printf '%-9s %-28s %-34s %7s %+6.1f%%\n' "$p" "$name" "main's total" "" \
			"$(awk -v m="$main" -v u="${plain_of[$p]}" 'BEGIN { print 100 * (m - u) / u }')"
}
for p in synth minigzip leaf; do
	[ -r "$work/$p.top" ] || continue
	variant "$p" stream "stream (the default)"
	variant "$p" ring "ring, writer idle in the run" HOOKPROF_MODE=ring
	wrap=(taskset -c 0)
	variant "$p" onecore "writer on the program's core"
	[ "$p" = leaf ] && variant "$p" exclude "leaf excluded" HOOKPROF_EXCLUDE='^leaf$'
done
exit 0
