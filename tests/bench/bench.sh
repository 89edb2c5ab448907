#!/usr/bin/env bash
# bench.sh - hookprof's overhead, trace size and report speed, side by side
# with a "floor" (the cheapest useful hooks) and uftrace, on this machine.
#
# A benchmark, never a test: it prints figures and always exits 0 once the
# bench programs are built, whatever the timings and whichever tools are
# missing. Run by `make bench` after the build; by hand:
#   tests/bench/bench.sh
# Environment:
#   BENCH_REPS=N       timed runs of each no-op/floor/hookprof case (default 3;
#                      the fastest is shown); uftrace runs once per program
#   BENCH_UFTRACE=0    leave uftrace out
#   BENCH_INSTALL=0    do not try to apt-get install a missing uftrace
#   BENCH_MD=FILE      the Markdown copy of the figures (default build/bench.md)
#   BENCH_SRC=DIR      where zlib's and Lua's Debian sources are kept
#                      (default build/bench-src; fetched once, sources.sh)
#   CC, CXX            compilers for the bench programs (default cc, c++)
#   TMPDIR             where traces are written (about 1 GB for uftrace's)
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
hookprof=$build/hookprof
lib=$build/libhookprof.so
render=$here/render.awk
reps=${BENCH_REPS:-3}
md=${BENCH_MD:-$build/bench.md}
cc=${CC:-cc}
cxx=${CXX:-c++}
progs=(fib leaf cxx threads8 threads64)

case $reps in '' | *[!0-9]* | 0) reps=3 ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/hookprof-bench.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
results=$work/results
: >"$results"

say() { printf '%s\n' "$*"; }
note() { printf 'bench: %s\n' "$*" >&2; }
# put KEY VALUE...: one figure for render.awk; a key given several times
# (one per repetition) is a list: the renderer takes its fastest or median.
put() { printf '%s %s\n' "$1" "${*:2}" >>"$results"; }

. "$here/sources.sh"

# ---- the programs, the floor and runstat ---------------------------------

say "hookprof bench: building the bench programs in $work"
bin=$work/bin
mkdir -p "$bin"
build_fail=0
"$cc" -O2 -Wall -Wextra -fno-instrument-functions "$here/runstat.c" -o "$bin/runstat" || build_fail=1
"$cc" -O2 -Wall -Wextra -fno-instrument-functions -fPIC -shared "$here/floor.c" \
	-o "$bin/floor.so" || build_fail=1
for p in fib leaf threads8; do
	"$cc" -finstrument-functions -O2 -pthread "$here/progs/$p.c" -o "$bin/$p" || build_fail=1
done
"$cc" -finstrument-functions -O2 -pthread -DNTHREADS=64 -DFIB_N=26 "$here/progs/threads8.c" \
	-o "$bin/threads64" || build_fail=1
"$cxx" -finstrument-functions -O2 "$here/progs/cxx.cpp" -o "$bin/cxx" || build_fail=1
if [ "$build_fail" = 1 ]; then
	note "cannot build the bench programs with CC=$cc CXX=$cxx"
	exit 1
fi
# Real programs from Debian's source packages (sources.sh): left out, with
# a note, where they cannot be fetched or built.
declare -A args=([lua]="$here/progs/bench.lua")
declare -A stdin_of=([minigzip]="$work/input.txt")
minigzip_input "$work/input.txt"
for p in minigzip lua; do
	if "build_$p" "$bin/$p" -finstrument-functions -O2; then
		progs+=("$p")
	else
		note "$p: cannot fetch or build its Debian source package: its row is left out"
	fi
done
runstat=$bin/runstat

have_lib=0
[ -r "$lib" ] && have_lib=1
have_tool=0
[ -x "$hookprof" ] && have_tool=1
[ "$have_lib" = 1 ] || note "$lib is missing: no hookprof figures (make -C $root first)"
[ "$have_tool" = 1 ] || note "$hookprof is missing: no call counts from traces, no report timing"

# ---- uftrace ---------------------------------------------------------------

have_uftrace=0
if [ "${BENCH_UFTRACE:-1}" != 0 ]; then
	if ! command -v uftrace >/dev/null 2>&1 && [ "${BENCH_INSTALL:-1}" != 0 ] &&
		command -v apt-get >/dev/null 2>&1; then
		sudo=()
		if [ "$(id -u)" != 0 ]; then
			if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
				sudo=(sudo -n)
			fi
		fi
		if [ "$(id -u)" = 0 ] || [ "${#sudo[@]}" -gt 0 ]; then
			note "uftrace is not installed; trying apt-get install uftrace"
			export DEBIAN_FRONTEND=noninteractive
			if ! "${sudo[@]}" apt-get install -y -qq uftrace >/dev/null 2>&1; then
				"${sudo[@]}" apt-get update -qq >/dev/null 2>&1
				"${sudo[@]}" apt-get install -y -qq uftrace >/dev/null 2>&1 ||
					note "apt-get could not install uftrace"
			fi
		fi
	fi
	if command -v uftrace >/dev/null 2>&1; then
		have_uftrace=1
	else
		note "uftrace is not available: its columns are left out"
	fi
fi

# ---- what the figures were taken on ----------------------------------------

model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)
put machine.model "${model:-unknown}"
put machine.nproc "$(nproc 2>/dev/null || echo '?')"
put machine.kernel "$(uname -sr)"
put machine.date "$(date -u '+%Y-%m-%d %H:%M UTC')"
put machine.cc "$("$cc" --version 2>/dev/null | head -n 1)"
put machine.reps "$reps"
put machine.load "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
if [ "$have_uftrace" = 1 ]; then
	put machine.uftrace "$(uftrace --version 2>/dev/null | head -n 1 | awk '{print $2}')"
fi
if git -C "$root" rev-parse --short HEAD >/dev/null 2>&1; then
	put machine.commit "$(git -C "$root" describe --always --dirty 2>/dev/null)"
fi

put fib.desc "recursive fib(35)"
put leaf.desc "loop calling a noinline leaf 30M times, 3 levels down"
put cxx.desc "C++ particle simulation: small getters/setters and std::vector accessors"
put threads8.desc "8 pthreads, each a recursive fib(30)"
put threads64.desc "64 pthreads, each a recursive fib(26)"
put minigzip.desc "zlib's minigzip compressing 16 MiB of text (Debian's zlib source)"
put lua.desc "the Lua 5.4 interpreter running tests/bench/progs/bench.lua (Debian's lua5.4 source)"
# Calls every run makes, main included; cxx's depend on libstdc++'s inline
# code, so they are only counted from the trace.
put fib.expected 29860704
put leaf.expected 30100102
put threads8.expected 21540305
put threads64.expected 25141505
# Issue 8's targets where they differ from the default (wall <= 1.25x the
# floor's overhead, CPU <= 2x).
put minigzip.target.wall 1.5
put threads8.target.wall 1.4
put threads8.target.cpu 1.6
put threads64.target.wall 1.4
put threads64.target.cpu 1.6

# ---- measuring ---------------------------------------------------------------

# timed PROG TOOL STATFILE CMD...: one run under runstat (stdin from PROG's
# input file, if it has one); records wall, cpu and rss for PROG.TOOL, or a
# failure; shows what the run printed on stderr. Returns the command's status.
timed() {
	local prog=$1 tool=$2 stat=$3 rc in=()
	shift 3
	[ -n "${stdin_of[$prog]:-}" ] && in=(-i "${stdin_of[$prog]}")
	"$runstat" -q -e "$work/stderr" "${in[@]}" -o "$stat" -- "$@"
	rc=$?
	if [ -s "$work/stderr" ]; then
		# Said on stderr by the program or the tool (e.g. lost events): shown.
		note "$prog under $tool said:"
		head -n 5 "$work/stderr" | sed 's/^/    /' >&2
	fi
	if [ "$rc" != 0 ] || [ ! -s "$stat" ]; then
		note "$prog under $tool: exit status $rc"
		put "$prog.$tool.failed" "$rc"
		return 1
	fi
	local wall cpu rss
	read -r wall cpu rss <"$stat"
	put "$prog.$tool.wall" "$wall"
	put "$prog.$tool.cpu" "$cpu"
	put "$prog.$tool.rss" "$rss"
	return 0
}

# trace_info TRACE: "events lost" from hookprof info.
trace_info() {
	"$hookprof" info "$1" 2>/dev/null | awk '
		/^events:/ { ev = $2 }
		/^lost:/ { lost += $2 }
		/^  stream / && $NF == "lost" { lost += $(NF - 1) }
		END { print ev + 0, lost + 0 }'
}

# count_calls TRACE: the sum of the calls column of the CSV report. Function
# names may hold quoted commas, so the column is counted from the right
# (calls, then total, self, avg, min, max, module and source).
count_calls() {
	"$hookprof" report --format=csv "$1" 2>/dev/null |
		awk -F, 'NR > 1 { n += $(NF - 7) } END { if (NR > 1) print n }'
}

stat=$work/stat
fib_trace=""
uf_fib=""
for p in "${progs[@]}"; do
	exe=("$bin/$p" ${args[$p]:-})
	say ""
	say "== $p: running no-op, floor and hookprof $reps times each (interleaved)"
	sync # earlier traces' write-back must not land in these timings
	timed "$p" warm "$stat" "${exe[@]}" || true # warm the page cache
	for ((r = 1; r <= reps; r++)); do
		timed "$p" noop "$stat" "${exe[@]}"
		timed "$p" floor "$stat" env LD_PRELOAD="$bin/floor.so" "${exe[@]}"
		[ "$have_lib" = 1 ] || continue
		out=$work/hp-$p-$r
		mkdir -p "$out"
		timed "$p" hookprof "$stat" env LD_PRELOAD="$lib" HOOKPROF_OUTPUT="$out" "${exe[@]}" || continue
		trace=$(find "$out" -type f -name '*.hookprof*' | head -n 1)
		if [ -z "$trace" ]; then
			note "$p: hookprof wrote no trace in $out"
			put "$p.hookprof.notrace" 1
			continue
		fi
		put "$p.hookprof.bytes" "$(stat -c %s "$trace")"
		if [ "$have_tool" = 1 ]; then
			read -r ev lost < <(trace_info "$trace")
			put "$p.hookprof.events" "$ev"
			put "$p.hookprof.lost" "$lost"
			if [ "$r" = 1 ]; then
				calls=$(count_calls "$trace")
				[ -n "$calls" ] && put "$p.calls" "$calls"
			fi
		fi
		if [ "$p" = fib ] && [ -z "$fib_trace" ]; then
			fib_trace=$trace
		else
			rm -rf "$out"
		fi
	done
	if [ "$have_uftrace" = 1 ]; then
		say "== $p: running uftrace record once"
		sync
		ufdir=$work/uftrace-$p
		if timed "$p" uftrace "$stat" uftrace record -d "$ufdir" "${exe[@]}"; then
			put "$p.uftrace.bytes" "$(du -sb "$ufdir" | cut -f1)"
		fi
		if [ "$p" = fib ] && [ -d "$ufdir" ]; then
			uf_fib=$ufdir
		else
			rm -rf "$ufdir"
		fi
	fi
	awk -v mode=program -v prog="$p" -v progs="${progs[*]}" -f "$render" "$results"
done

# ---- report throughput -------------------------------------------------------

if [ -n "$fib_trace" ] && [ "$have_tool" = 1 ]; then
	say ""
	say "== report: hookprof report on the fib trace, $reps times"
	sync
	read -r ev _ < <(trace_info "$fib_trace")
	put report.events "$ev"
	for ((r = 1; r <= reps; r++)); do
		timed report hookprof "$stat" "$hookprof" report "$fib_trace"
	done
	# The same program with 1/100 of the events: the report's memory must
	# not grow with the trace (records are read one at a time).
	small=$work/hp-small
	mkdir -p "$small"
	if env LD_PRELOAD="$lib" HOOKPROF_OUTPUT="$small/fib25.hookprof" "$bin/fib" 25 >/dev/null; then
		read -r ev _ < <(trace_info "$small/fib25.hookprof")
		put small.events "$ev"
		timed small hookprof "$stat" "$hookprof" report "$small/fib25.hookprof"
	fi
	if [ -n "$uf_fib" ]; then
		say "== report: uftrace report on its fib recording, once"
		timed report uftrace "$stat" uftrace report -d "$uf_fib"
	fi
fi

# ---- summary -----------------------------------------------------------------

say ""
mkdir -p "$(dirname "$md")"
cp "$results" "${md%.md}.raw" # the figures themselves, for rendering again
awk -v mode=summary -v progs="${progs[*]}" -f "$render" "$results"
if awk -v mode=markdown -v progs="${progs[*]}" -f "$render" "$results" >"$md"; then
	say ""
	say "Markdown copy: $md"
fi
exit 0
