#!/bin/bash
# tests/e2e/run.sh - end-to-end tests of hookprof: builds the sample programs
# of tests/e2e/progs/ into a temporary directory, runs them linked with
# libhookprof, with it preloaded and through `hookprof record`, and checks the
# reports (exact call counts, names, modules, time invariants), the trace
# file naming rules and the handling of bad input.
#
#   tests/e2e/run.sh            (from anywhere; HOOKPROF_BUILD=dir overrides build/,
#                                HOOKPROF_E2E_KEEP=1 keeps the temporary directory)
#
# Sanitizer builds (make check-asan, check-tsan; docs/testing.md) also set
# HOOKPROF_E2E_CFLAGS (added to every sample program's compile line, as the
# runtime lives inside them) and HOOKPROF_SANITIZER (address or thread): the
# checks that cannot work under it are skipped, each with a `skip - ...` line.
#
# Prints `ok - ...` or `not ok - ... (details)` per check, then exactly one
# line `e2e: N passed, M failed`; exits 1 if any check failed.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${HOOKPROF_BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
HP=$BUILD/hookprof
LIB=$BUILD/libhookprof.so
ARCHIVE=$BUILD/libhookprof.a
INC=$ROOT/include
SRC=$ROOT/tests/e2e/progs

# Nothing of the caller's environment may steer the traced programs.
unset HOOKPROF_OUTPUT HOOKPROF_MODE HOOKPROF_BUFFER HOOKPROF_CLOCK HOOKPROF_LIB LD_PRELOAD
unset HOOKPROF_EXCLUDE HOOKPROF_INCLUDE HOOKPROF_DEPTH HOOKPROF_MIN
export LC_ALL=C
ulimit -c 0 2>/dev/null # the crash tests must not leave core files

T=$(mktemp -d "${TMPDIR:-/tmp}/hookprof-e2e.XXXXXX") || { echo "e2e: 0 passed, 1 failed"; exit 1; }
if [ -n "${HOOKPROF_E2E_KEEP:-}" ]; then
	echo "# keeping $T"
else
	trap 'rm -rf "$T"' EXIT
fi
trap 'exit 130' INT TERM HUP

SANITIZER=${HOOKPROF_SANITIZER:-}
read -r -a E2E_CFLAGS <<<"${HOOKPROF_E2E_CFLAGS:-}"

PASS=0
FAIL=0
SKIP=0
ok() { PASS=$((PASS + 1)); printf 'ok - %s\n' "$1"; }
nok() { FAIL=$((FAIL + 1)); printf 'not ok - %s (%s)\n' "$1" "$2"; }
# check DESC DETAILS COMMAND...: ok if COMMAND succeeds.
check() {
	local desc=$1 details=$2
	shift 2
	if "$@"; then ok "$desc"; else nok "$desc" "$details"; fi
}
# all_of CMD... -- CMD...: every command succeeds (for one check of several).
all_of() {
	local cmd=()
	while [ $# -gt 0 ]; do
		if [ "$1" = -- ]; then "${cmd[@]}" || return 1; cmd=(); else cmd+=("$1"); fi
		shift
	done
	[ ${#cmd[@]} -eq 0 ] || "${cmd[@]}"
}
# First lines of a file, on one line, for the details of a failed check.
brief() { head -c 400 "$1" 2>/dev/null | tr '\n' '|' | tr -d '\r'; }
now_ns() { date +%s%N; }
# wait_ready FILE PID: waits until FILE exists (the program says it is under
# way), at most GUARD_S seconds or until PID is gone; false if it never came.
wait_ready() {
	local tenths=$((GUARD_S * 10))
	while [ ! -e "$1" ]; do
		kill -0 "$2" 2>/dev/null || return 1
		tenths=$((tenths - 1))
		[ $tenths -gt 0 ] || return 1
		sleep 0.1
	done
}

# skipped_under SANITIZER... -- DESC REASON: true (and says so, counted) if
# this run is under one of the sanitizers named: the caller skips DESC.
skipped_under() {
	local san
	while [ "$1" != -- ]; do
		san=$1
		shift
		if [ "$san" = "$SANITIZER" ]; then
			while [ "$1" != -- ]; do shift; done
			SKIP=$((SKIP + 1))
			printf 'skip - %s (under %s: %s)\n' "$2" "$SANITIZER" "$3"
			return 0
		fi
	done
	return 1
}

finish() {
	[ "$SKIP" -eq 0 ] || echo "# e2e: $SKIP groups of checks skipped${SANITIZER:+ under the $SANITIZER sanitizer}"
	echo "e2e: $PASS passed, $FAIL failed"
	[ "$FAIL" -eq 0 ]
	exit $?
}

# ---- preconditions ------------------------------------------------------

for f in "$HP" "$LIB" "$INC/hookprof.h"; do
	if [ ! -e "$f" ]; then
		nok "build: $f exists" "run make first"
		finish
	fi
done
ok "build: hookprof, libhookprof.so and hookprof.h exist"

# ---- building the sample programs ---------------------------------------

B=$T/bin
mkdir -p "$B"
BUILD_LOG=$T/build.log

# build OUT COMPILER ARGS...: on failure the binary is missing, and every
# check that needs it fails.
build() {
	local out=$1 san=("${E2E_CFLAGS[@]}")
	shift
	# clang's sanitizer runtimes are not gcc's, and two cannot share a
	# process: clang's programs get the runtime library's (gcc's) only.
	case $1 in clang*) san=() ;; esac
	if "$@" "${san[@]}" -o "$B/$out" >"$BUILD_LOG" 2>&1; then
		return 0
	fi
	nok "build $out" "$* : $(brief "$BUILD_LOG")"
	rm -f "$B/$out"
	return 1
}
LINK=(-I"$INC" -L"$BUILD" -lhookprof -Wl,-rpath,"$BUILD")
IF=(-finstrument-functions -g)

build nested_O0 gcc "${IF[@]}" -O0 "$SRC/nested.c"
build nested_O2 gcc "${IF[@]}" -O2 "$SRC/nested.c"
build nested_O0_linked gcc "${IF[@]}" -O0 "$SRC/nested.c" "${LINK[@]}"
build nested_O2_linked gcc "${IF[@]}" -O2 "$SRC/nested.c" "${LINK[@]}"
build nested_nopie gcc "${IF[@]}" -O1 -fno-pie -no-pie "$SRC/nested.c"
build nested_pie gcc "${IF[@]}" -O1 -fPIE -pie "$SRC/nested.c"
build nested_nopie_linked gcc "${IF[@]}" -O1 -fno-pie -no-pie "$SRC/nested.c" "${LINK[@]}"
# libhookprof.a needs libunwind (hookprof.pc Libs.private), and -static its liblzma.
build nested_static gcc "${IF[@]}" -O1 "$SRC/nested.c" "$ARCHIVE" -pthread -lunwind
# Fully static: the archive must not clash with libc.a (no interposed exit).
STATIC=nested_fullstatic
if skipped_under address thread -- "nested_fullstatic (-static)" "the sanitizers need a dynamic link"; then
	STATIC=
else
	build nested_fullstatic gcc "${IF[@]}" -O1 -static "$SRC/nested.c" "$ARCHIVE" -pthread -lunwind -llzma
fi
build forkexit gcc "${IF[@]}" -O1 "$SRC/forkexit.c"
build recursion gcc "${IF[@]}" -O2 -pthread "$SRC/recursion.c"
build recursion_linked gcc "${IF[@]}" -O0 -pthread "$SRC/recursion.c" "${LINK[@]}"
build threads gcc "${IF[@]}" -O2 -pthread "$SRC/threads.c"
build threads_linked gcc "${IF[@]}" -O0 -pthread "$SRC/threads.c" "${LINK[@]}"
build cxx g++ "${IF[@]}" -O1 "$SRC/cxx.cpp"
build cxx_linked g++ "${IF[@]}" -O0 "$SRC/cxx.cpp" "${LINK[@]}"
build libshape.so gcc "${IF[@]}" -O1 -fPIC -shared "$SRC/shape.c"
build useshape gcc "${IF[@]}" -O1 "$SRC/useshape.c" -L"$B" -lshape -Wl,-rpath,"$B"
build useshape_linked gcc "${IF[@]}" -O0 "$SRC/useshape.c" -L"$B" -lshape -Wl,-rpath,"$B" "${LINK[@]}"
build plugin.so gcc "${IF[@]}" -O1 -fPIC -shared "$SRC/plugin.c"
build useplugin gcc "${IF[@]}" -O1 "$SRC/useplugin.c" -ldl
build useplugin_linked gcc "${IF[@]}" -O0 "$SRC/useplugin.c" -ldl "${LINK[@]}"
build ending gcc "${IF[@]}" -O0 "$SRC/ending.c"
build ending_linked gcc "${IF[@]}" -O0 "$SRC/ending.c" "${LINK[@]}"
build flushkill_linked gcc "${IF[@]}" -O0 "$SRC/flushkill.c" "${LINK[@]}"
build jump gcc "${IF[@]}" -O1 "$SRC/jump.c"
build jump_linked gcc "${IF[@]}" -O0 "$SRC/jump.c" "${LINK[@]}"
build throw g++ "${IF[@]}" -O1 "$SRC/throw.cpp"
build throw_linked g++ "${IF[@]}" -O0 "$SRC/throw.cpp" "${LINK[@]}"
build manythreads_linked gcc "${IF[@]}" -O1 -pthread "$SRC/manythreads.c" "${LINK[@]}"
build sigtimer gcc "${IF[@]}" -O1 "$SRC/sigtimer.c"
build multiexit gcc "${IF[@]}" -O1 -pthread "$SRC/multiexit.c"
build rawfork gcc "${IF[@]}" -O1 "$SRC/rawfork.c"
build sigpipe gcc "${IF[@]}" -O1 "$SRC/sigpipe.c"
build blockedsig_linked gcc "${IF[@]}" -O1 -pthread "$SRC/blockedsig.c" -ldl "${LINK[@]}"
build flushunlinked_linked gcc "${IF[@]}" -O0 "$SRC/flushunlinked.c" "${LINK[@]}"
build plugin_linked.so gcc "${IF[@]}" -O1 -fPIC -shared "$SRC/plugin.c" "${LINK[@]}"
build deepbind gcc -g -O1 -pthread "$SRC/deepbind.c" -ldl
HAVE_CLANG=0
# They cannot carry gcc's sanitizer runtime (see build); ASan copes with being
# loaded as the runtime library's dependency, TSan must be in the program.
if skipped_under thread -- "the programs built with clang" "TSan must be linked into the program, and clang's is not gcc's"; then
	:
elif command -v clang >/dev/null 2>&1; then
	HAVE_CLANG=1
	build nested_clang clang -finstrument-functions -g -O0 "$SRC/nested.c"
	build nested_clang_ai clang -finstrument-functions-after-inlining -g -O2 "$SRC/nested.c"
	build nested_clang_ai_linked clang -finstrument-functions-after-inlining -g -O2 "$SRC/nested.c" "${LINK[@]}"
	build jump_clang clang -finstrument-functions -g -O1 "$SRC/jump.c"
	build throw_clang clang++ -finstrument-functions -g -O1 "$SRC/throw.cpp"
else
	echo "# clang not found: the clang checks are not run"
fi

# ---- running ------------------------------------------------------------

# run MODE NAME BIN ARGS...: runs $B/BIN in a fresh directory $T/run/NAME with
# the trace going to $DIR/trace.hookprof. MODE: linked (the binary is linked
# with libhookprof), preload (LD_PRELOAD), record (hookprof record -o).
# Sets DIR, TRACE, RC, WALL_NS; stdout and stderr are in $DIR/out, $DIR/err.
RUNS=0
run() {
	local mode=$1 name=$2 bin=$3 t0
	shift 3
	RUNS=$((RUNS + 1))
	DIR=$T/run/$RUNS-$name
	TRACE=$DIR/trace.hookprof
	mkdir -p "$DIR"
	t0=$(now_ns)
	case $mode in
	linked) { (cd "$DIR" && HOOKPROF_OUTPUT=$TRACE exec "$B/$bin" "$@" >out 2>err); } 2>/dev/null ;;
	preload) { (cd "$DIR" && HOOKPROF_OUTPUT=$TRACE LD_PRELOAD=$LIB exec "$B/$bin" "$@" >out 2>err); } 2>/dev/null ;;
	record) { (cd "$DIR" && exec "$HP" record -o "$TRACE" -- "$B/$bin" "$@" >out 2>err); } 2>/dev/null ;;
	*) echo "run: bad mode $mode" >&2; exit 2 ;;
	esac
	RC=$?
	WALL_NS=$(($(now_ns) - t0))
}

# check_run LABEL MODE WANT_RC WANT_STDOUT: the run's exit status, stdout,
# stderr (nothing but record's own line) and the trace file.
check_run() {
	local label=$1 mode=$2 want_rc=$3 want_out=$4
	check "$label: exit status $want_rc" "got $RC; stderr: $(brief "$DIR/err")" [ "$RC" = "$want_rc" ]
	check "$label: program output" "got '$(brief "$DIR/out")', want '$want_out'" \
		[ "$(cat "$DIR/out")" = "$want_out" ]
	if [ "$mode" = record ]; then
		check "$label: record says 'hookprof: trace written to $TRACE'" "stderr: $(brief "$DIR/err")" \
			[ "$(cat "$DIR/err")" = "hookprof: trace written to $TRACE" ]
	else
		check "$label: nothing on stderr" "stderr: $(brief "$DIR/err")" [ ! -s "$DIR/err" ]
	fi
	check "$label: trace file written" "no $TRACE; files: $(ls "$DIR" | tr '\n' ' ')" [ -s "$TRACE" ]
}

# ---- reading reports ----------------------------------------------------

HEADER='function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,module,source'

# RFC 4180 to tab-separated fields: function calls total self avg min max
# module source. Fails (status 1, reason on stdout) on a bad header, a bad
# quote, a row without 9 fields, a number that is not a non-negative number
# or a source that is neither empty nor FILE:LINE.
csv_to_tsv() {
	awk -v header="$HEADER" '
	function parse(line,   n, i, c, f, inq, start, L) {
		n = 0; f = ""; inq = 0; start = 1; L = length(line)
		for (i = 1; i <= L; i++) {
			c = substr(line, i, 1)
			if (inq) {
				if (c == "\"") {
					if (substr(line, i + 1, 1) == "\"") { f = f "\""; i++ }
					else { inq = 0; if (i < L && substr(line, i + 1, 1) != ",") return -1 }
				} else
					f = f c
			} else if (c == "\"") {
				if (!start) return -1
				inq = 1; start = 0
			} else if (c == ",") {
				fld[++n] = f; f = ""; start = 1
			} else {
				f = f c; start = 0
			}
		}
		if (inq) return -1
		fld[++n] = f
		return n
	}
	{ sub(/\r$/, "") }
	NR == 1 { if ($0 != header) { print "bad header: " $0; bad = 1; exit 1 } next }
	{
		n = parse($0)
		if (n != 9) { print "row " NR " has " n " fields: " $0; bad = 1; exit 1 }
		if (fld[2] !~ /^[0-9]+$/) { print "row " NR ": calls not a count: " $0; bad = 1; exit 1 }
		for (k = 3; k <= 7; k++)
			if (fld[k] !~ /^[0-9]+(\.[0-9]+)?$/) { print "row " NR ": field " k " not a time >= 0: " $0; bad = 1; exit 1 }
		if (fld[1] == "" || fld[8] == "") { print "row " NR ": empty name or module: " $0; bad = 1; exit 1 }
		if (fld[9] != "" && fld[9] !~ /.:[1-9][0-9]*$/) { print "row " NR ": source not FILE:LINE: " $0; bad = 1; exit 1 }
		out = fld[1]
		for (k = 2; k <= 9; k++) out = out "\t" fld[k]
		rows[++nrows] = out
	}
	END {
		if (bad) exit 1
		if (NR < 1) { print "no output"; exit 1 }
		for (i = 1; i <= nrows; i++) print rows[i]
	}' "$1"
}

# report LABEL TRACE...: hookprof report --format=csv; sets TSV (the parsed
# rows); fails if the report did not work. Checks the exit status, stderr, the CSV.
REPORTS=0
report() {
	local label=$1
	shift
	REPORTS=$((REPORTS + 1))
	local base=$T/report/$REPORTS
	mkdir -p "$T/report"
	TSV=$base.tsv
	"$HP" report --format=csv "$@" >"$base.csv" 2>"$base.err"
	local rc=$?
	if [ $rc -ne 0 ]; then
		nok "$label: report --format=csv works" "exit status $rc; stderr: $(brief "$base.err")"
		: >"$TSV"
		return 1
	fi
	if ! csv_to_tsv "$base.csv" >"$TSV"; then
		nok "$label: report --format=csv works" "$(brief "$TSV")"
		: >"$TSV"
		return 1
	fi
	if [ -s "$base.err" ]; then
		nok "$label: report --format=csv works" "stderr: $(brief "$base.err")"
		return 1
	fi
	ok "$label: report --format=csv works ($(wc -l <"$TSV") functions)"
}

# field FUNC MODULE COLUMN: the column (2 calls .. 7 max) of FUNC's row in
# TSV; MODULE "" matches any. Empty if there is no such row, "MULTI" if there
# are several.
field() {
	awk -F'\t' -v f="$1" -v m="$2" -v c="$3" '
		$1 == f && (m == "" || $8 == m) { n++; v = $c }
		END { if (n == 1) print v; else if (n > 1) print "MULTI" }' "$TSV"
}
rows_of() { awk -F'\t' -v f="$1" '$1 == f { printf "%s ", $8 }' "$TSV"; }

# expect_calls LABEL MODULE FUNC=N ...: exactly one row for FUNC in MODULE
# with exactly N calls.
expect_calls() {
	local label=$1 module=$2 spec f n got
	shift 2
	for spec in "$@"; do
		f=${spec%=*}
		n=${spec##*=}
		got=$(field "$f" "$module" 2)
		if [ "$got" = "$n" ]; then
			ok "$label: $f ($module) called $n times"
		elif [ -z "$got" ]; then
			nok "$label: $f ($module) called $n times" \
				"no row for '$f' in module '$module'; rows named so: $(rows_of "$f"); functions: $(cut -f1,8 "$TSV" | tr '\t\n' '@ ' | head -c 300)"
		else
			nok "$label: $f ($module) called $n times" "got $got"
		fi
	done
}

# check_times LABEL [flat]: in every row self <= total, min <= max <= total,
# avg = total/calls; with "flat" (no recursive function) also min <= avg <= max.
check_times() {
	local label=$1 flat=${2:-}
	local bad
	bad=$(awk -F'\t' -v flat="$flat" '
		function near(a, b) { d = a - b; if (d < 0) d = -d; return d <= 1.0001 }
		{
			calls = $2 + 0; total = $3 + 0; self = $4 + 0; avg = $5 + 0; mn = $6 + 0; mx = $7 + 0
			why = ""
			if (calls < 1) why = why " calls<1"
			if (self > total + 1) why = why " self>total"
			if (mn > mx + 1) why = why " min>max"
			if (mx > total + 1) why = why " max>total"
			if (calls > 0 && !near(avg, total / calls)) why = why " avg!=total/calls"
			if (flat == "flat" && (mn > avg + 1 || avg > mx + 1)) why = why " avg-not-in-[min,max]"
			if (why != "") printf "%s:%s; ", $1, why
		}' "$TSV")
	check "$label: self<=total, min<=max<=total, avg=total/calls${flat:+, min<=avg<=max}" "$bad" [ -z "$bad" ]
}

# check_self_sum LABEL ROOT...: the self times of all functions add up to the
# total times of the roots (functions not called by another instrumented one:
# main, thread functions), within rounding.
check_self_sum() {
	local label=$1
	shift
	local roots=" $* "
	local res
	res=$(awk -F'\t' -v roots="$roots" '
		{ s += $4; n++; if (index(roots, " " $1 " ")) { t += $3; found++ } }
		END {
			tol = n + 2 + t * 1e-6
			d = s - t; if (d < 0) d = -d
			printf "%s sum(self)=%.0f sum(total of roots)=%.0f", (found >= 1 && d <= tol) ? "yes" : "no", s, t
		}' "$TSV")
	check "$label: sum of self_ns equals the roots' total_ns" "${res#* }" [ "${res%% *}" = yes ]
}

# check_wall LABEL FUNC: 0 < FUNC's max_ns <= the run's wall time * 1.5 + 50ms.
check_wall() {
	local label=$1 f=$2
	local mx
	mx=$(field "$f" "" 7)
	local res
	res=$(awk -v m="$mx" -v w="$WALL_NS" 'BEGIN { print (m != "" && m != "MULTI" && m + 0 > 0 && m + 0 <= w * 1.5 + 50e6) ? "yes" : "no" }')
	check "$label: 0 < $f max_ns <= wall time" "$f max_ns=$mx wall_ns=$WALL_NS" [ "$res" = yes ]
}

# check_modules LABEL MODULE FUNC...: the functions' rows name MODULE.
check_modules() {
	local label=$1 module=$2 f bad=""
	shift 2
	for f in "$@"; do
		[ "$(field "$f" "" 8)" = "$module" ] || bad="$bad $f:$(rows_of "$f")"
	done
	check "$label: module of $* is $module" "got$bad" [ -z "$bad" ]
}

# ---- the checks of each program -----------------------------------------

NESTED_OUT="nested done 1"
nested_checks() { # LABEL BIN
	local label=$1 bin=$2
	report "$label" "$TRACE" || return
	expect_calls "$label" "$bin" main=1 nest_a=3 nest_b=6 nest_c=30
	check_times "$label" flat
	check_self_sum "$label" main
	check_wall "$label" main
	local total
	total=$(field main "$bin" 3)
	check "$label: main's total_ns > 0" "main total_ns=$total" awk -v t="$total" 'BEGIN { exit !(t + 0 > 0) }'
}

for bin in nested_O0 nested_O2 nested_pie nested_nopie; do
	for mode in preload record; do
		[ "$bin" = nested_O0 ] || [ "$mode" = preload ] || [ "$bin" = nested_nopie ] || continue
		run $mode "$bin-$mode" "$bin"
		check_run "$bin $mode" $mode 0 "$NESTED_OUT"
		nested_checks "$bin $mode" "$bin"
	done
done
for bin in nested_O0_linked nested_O2_linked nested_nopie_linked nested_static $STATIC; do
	run linked "$bin" "$bin"
	check_run "$bin linked" linked 0 "$NESTED_OUT"
	nested_checks "$bin linked" "$bin"
done
if [ $HAVE_CLANG = 1 ]; then
	run preload clang-O0 nested_clang
	check_run "nested clang -O0 preload" preload 0 "$NESTED_OUT"
	nested_checks "nested clang -O0 preload" nested_clang
	run preload clang-ai nested_clang_ai
	check_run "nested clang -finstrument-functions-after-inlining -O2 preload" preload 0 "$NESTED_OUT"
	nested_checks "nested clang -finstrument-functions-after-inlining -O2 preload" nested_clang_ai
	run linked clang-ai-linked nested_clang_ai_linked
	check_run "nested clang -finstrument-functions-after-inlining -O2 linked" linked 0 "$NESTED_OUT"
	nested_checks "nested clang -finstrument-functions-after-inlining -O2 linked" nested_clang_ai_linked
fi

DEEP_STACK="a recursion 100000 deep, on a 512 MB stack: TSan's shadow of it grows past 13 GB"
# Recursion: total_ns counts the outermost activation only, so it is the
# longest call (max_ns) and fits inside the thread function's time.
recursion_checks() { # LABEL BIN
	local label=$1 bin=$2 f
	report "$label" "$TRACE" || return
	expect_calls "$label" "$bin" main=1 rec_thread=1 rec_down=100000 rec_fib=21891
	check_times "$label"
	check_self_sum "$label" main rec_thread
	check_wall "$label" main
	for f in rec_down rec_fib; do
		local total mx outer
		total=$(field $f "$bin" 3)
		mx=$(field $f "$bin" 7)
		outer=$(field rec_thread "$bin" 3)
		check "$label: $f total_ns counts the outermost call only (= max_ns <= rec_thread total_ns)" \
			"$f total_ns=$total max_ns=$mx, rec_thread total_ns=$outer" \
			awk -v t="$total" -v m="$mx" -v o="$outer" 'BEGIN { d = t - m; if (d < 0) d = -d; exit !(t != "" && d <= 1 && t + 0 <= o + 1) }'
	done
}
if ! skipped_under thread -- "recursion linked and record" "$DEEP_STACK"; then
	run linked recursion-linked recursion_linked
	check_run "recursion linked" linked 0 "recursion 100000 6765"
	recursion_checks "recursion linked" recursion_linked
	run record recursion-record recursion
	check_run "recursion record" record 0 "recursion 100000 6765"
	recursion_checks "recursion record" recursion
	# Folded stacks write a path per level: 100000 paths of up to 100000
	# names, 45 GB. A warning says so before the first line (/dev/full
	# then fails the write at once; it is no regular file: it stays).
	if [ -c /dev/full ]; then
		"$HP" export --format=folded -o /dev/full "$TRACE" >/dev/null 2>"$DIR/folded.err"
		rc=$?
		check "recursion record: export --format=folded warns first of a recursion 100000 deep, then fails on /dev/full, which stays" \
			"status $rc, $(brief "$DIR/folded.err")" \
			all_of [ $rc = 1 -a -c /dev/full ] -- grep -q \
			"^hookprof: warning: the folded stacks may take up to [0-9.]* GB: call paths go 100001 calls deep .*--depth=N makes them smaller$" \
			"$DIR/folded.err"
	fi
	"$HP" export --format=folded --depth=1000 -o "$DIR/folded" "$TRACE" 2>"$DIR/folded1000.err"
	rc=$?
	check "recursion record: export --format=folded --depth=1000: no warning, paths of up to 1000 calls" \
		"status $rc, $(brief "$DIR/folded1000.err"), $(awk '{ print NF }' FS=';' "$DIR/folded" | sort -n | tail -n1) names at most" \
		[ $rc = 0 -a ! -s "$DIR/folded1000.err" -a "$(awk '{ print NF }' FS=';' "$DIR/folded" | sort -n | tail -n1)" = 1000 ]
fi

threads_checks() { # LABEL BIN
	local label=$1 bin=$2
	report "$label" "$TRACE" || return
	expect_calls "$label" "$bin" main=1 thr_worker=8 thr_work=8000
	check_times "$label" flat
	check_self_sum "$label" main thr_worker
	check_wall "$label" main
	check_wall "$label" thr_worker
	"$HP" report "$TRACE" >"$T/threads-table.out" 2>&1
	check "$label: the table shows the 9 threads" "$(brief "$T/threads-table.out")" \
		grep -q -w '9 threads' "$T/threads-table.out"
}
run linked threads-linked threads_linked
check_run "threads linked" linked 0 "threads done 1"
threads_checks "threads linked" threads_linked
run preload threads-preload threads
check_run "threads preload" preload 0 "threads done 1"
threads_checks "threads preload" threads
run record threads-record threads
check_run "threads record" record 0 "threads done 1"
threads_checks "threads record" threads

CXX_OUT="cxx 42 1"
cxx_checks() { # LABEL BIN
	local label=$1 bin=$2
	report "$label" "$TRACE" || return
	expect_calls "$label" "$bin" main=1 "geo::Shape::Shape(double, double)=1" \
		"geo::Shape::area() const=5" "geo::Shape::scale(double, double)=4" \
		"int geo::twice<int>(int)=7" "double geo::twice<double>(double)=2"
	check_times "$label" flat
	check_self_sum "$label" main
	# The name with a comma must come quoted, exactly so.
	check "$label: a name with a comma is quoted in the CSV" "$(grep -F 'scale' "${TSV%.tsv}.csv" | head -c 200)" \
		grep -q '^"geo::Shape::scale(double, double)",4,' "${TSV%.tsv}.csv"
}
run linked cxx-linked cxx_linked
check_run "cxx linked" linked 0 "$CXX_OUT"
cxx_checks "cxx linked" cxx_linked
run preload cxx-preload cxx
check_run "cxx preload" preload 0 "$CXX_OUT"
cxx_checks "cxx preload" cxx
run record cxx-record cxx
check_run "cxx record" record 0 "$CXX_OUT"
cxx_checks "cxx record" cxx

# A shared library: its functions are named and carry its module name.
shape_checks() { # LABEL BIN
	local label=$1 bin=$2
	report "$label" "$TRACE" || return
	expect_calls "$label" "$bin" main=1 use_shapes=1
	expect_calls "$label" libshape.so shape_total=1 shape_square=7 shape_rect=4
	check_modules "$label" libshape.so shape_total shape_square shape_rect
	check_times "$label" flat
	check_self_sum "$label" main
}
run linked useshape-linked useshape_linked
check_run "libshape.so linked" linked 0 "useshape 31"
shape_checks "libshape.so linked" useshape_linked
run preload useshape-preload useshape
check_run "libshape.so preload" preload 0 "useshape 31"
shape_checks "libshape.so preload" useshape
run record useshape-record useshape
check_run "libshape.so record" record 0 "useshape 31"
shape_checks "libshape.so record" useshape

# A plugin loaded with dlopen after tracing began.
plugin_checks() { # LABEL BIN
	local label=$1 bin=$2
	report "$label" "$TRACE" || return
	expect_calls "$label" "$bin" main=1 call_plugin=2
	expect_calls "$label" plugin.so plugin_run=2 plugin_helper=8
	check_times "$label" flat
	check_self_sum "$label" main
}
run linked useplugin-linked useplugin_linked "$B/plugin.so"
check_run "dlopen plugin linked" linked 0 "useplugin 168"
plugin_checks "dlopen plugin linked" useplugin_linked
run preload useplugin-preload useplugin "$B/plugin.so"
check_run "dlopen plugin preload" preload 0 "useplugin 168"
plugin_checks "dlopen plugin preload" useplugin
run record useplugin-record useplugin "$B/plugin.so"
check_run "dlopen plugin record" record 0 "useplugin 168"
plugin_checks "dlopen plugin record" useplugin
run preload useplugin-close useplugin "$B/plugin.so" close
check_run "dlopen plugin, dlclose before exit, preload" preload 0 "useplugin 168"
plugin_checks "dlopen plugin, dlclose before exit, preload" useplugin

# exit() deep inside, abort(), a segfault: the trace is complete up to there;
# main and the end_deep* frames never returned and are closed at the end.
ending_checks() { # LABEL BIN
	local label=$1 bin=$2
	report "$label" "$TRACE" || return
	expect_calls "$label" "$bin" main=1 end_step=10 end_deep1=1 end_deep2=1 end_deep3=1
	check_times "$label" flat
	check_self_sum "$label" main
	check_wall "$label" main
	local m d1 d2 d3
	m=$(field main "$bin" 3)
	d1=$(field end_deep1 "$bin" 3)
	d2=$(field end_deep2 "$bin" 3)
	d3=$(field end_deep3 "$bin" 3)
	check "$label: unfinished frames closed at the end (main > end_deep1 >= end_deep2 >= end_deep3)" \
		"main=$m end_deep1=$d1 end_deep2=$d2 end_deep3=$d3" \
		awk -v m="$m" -v a="$d1" -v b="$d2" -v c="$d3" 'BEGIN { exit !(m != "" && a != "" && b != "" && c != "" && m + 0 > a + 0 && a + 1 >= b && b + 1 >= c) }'
}
for how in exit abort segv; do
	case $how in exit) want=7 ;; abort) want=134 ;; segv) want=139 ;; esac
	run linked "ending-$how-linked" ending_linked $how
	check_run "$how() inside nested calls, linked" linked "$want" "ending $how"
	ending_checks "$how() inside nested calls, linked" ending_linked
	run preload "ending-$how-preload" ending $how
	check_run "$how() inside nested calls, preload" preload "$want" "ending $how"
	ending_checks "$how() inside nested calls, preload" ending
done
run record ending-exit-record ending exit
check_run "exit() inside nested calls, record (exits 7 too)" record 7 "ending exit"
ending_checks "exit() inside nested calls, record" ending
run record ending-abort-record ending abort
check_run "abort() inside nested calls, record (dies of SIGABRT too)" record 134 "ending abort"
ending_checks "abort() inside nested calls, record" ending

# Frames left without their exit hook: longjmp over them, an exception
# unwinding through them (clang runs no exit hooks then, g++ does). The next
# exit of a frame below closes them (docs/format.md, op 0x41): exact counts,
# and inclusive times that nest.
# check_nesting LABEL OUTER MID INNER: total(OUTER) >= total(MID) >= total(INNER).
check_nesting() {
	local label=$1 o m i
	o=$(field "$2" "" 3) m=$(field "$3" "" 3) i=$(field "$4" "" 3)
	check "$label: total times nest ($2 >= $3 >= $4)" "$2=$o $3=$m $4=$i" \
		awk -v o="$o" -v m="$m" -v i="$i" 'BEGIN { exit !(o != "" && m != "" && i != "" && o + 1 >= m && m + 1 >= i) }'
}
jump_checks() { # LABEL BIN
	local label=$1 bin=$2
	report "$label" "$TRACE" || return
	expect_calls "$label" "$bin" main=1 jmp_outer=3 jmp_mid=3 jmp_inner=3 jmp_after=1
	check_times "$label" flat
	check_self_sum "$label" main
	check_nesting "$label" jmp_outer jmp_mid jmp_inner
}
throw_checks() { # LABEL BIN
	local label=$1 bin=$2
	report "$label" "$TRACE" || return
	expect_calls "$label" "$bin" main=1 "thr_catch(int)=4" "thr_a(int)=4" "thr_b(int)=4" "thr_after()=1"
	check_times "$label" flat
	check_self_sum "$label" main
	check_nesting "$label" "thr_catch(int)" "thr_a(int)" "thr_b(int)"
}
run preload jump-preload jump
check_run "longjmp over instrumented frames, preload" preload 0 "jump 6"
jump_checks "longjmp over instrumented frames, preload" jump
run linked jump-linked jump_linked
check_run "longjmp over instrumented frames, linked" linked 0 "jump 6"
jump_checks "longjmp over instrumented frames, linked" jump_linked
run preload throw-preload throw
check_run "C++ exception through instrumented frames (g++), preload" preload 0 "throw 4"
throw_checks "C++ exception through instrumented frames (g++), preload" throw
run linked throw-linked throw_linked
check_run "C++ exception through instrumented frames (g++), linked" linked 0 "throw 4"
throw_checks "C++ exception through instrumented frames (g++), linked" throw_linked
if [ $HAVE_CLANG = 1 ]; then
	run preload jump-clang jump_clang
	check_run "longjmp over instrumented frames (clang), preload" preload 0 "jump 6"
	jump_checks "longjmp over instrumented frames (clang), preload" jump_clang
	run preload throw-clang throw_clang
	check_run "C++ exception through instrumented frames (clang++, no exit hooks), preload" preload 0 "throw 4"
	throw_checks "C++ exception through instrumented frames (clang++, no exit hooks), preload" throw_clang
fi

# ---- robustness ---------------------------------------------------------

# Thousands of short-lived threads, signal handlers inside the hooks, exit()
# from two threads at once, forks that run no atfork handler, deaths by
# SIGPIPE and by a signal while a thread waits for the writer, a flush that
# cannot write, the library unloaded by dlclose: no crash, no hang, and a
# complete trace with exact counts.

# run_guarded MODE NAME BIN [VAR=VALUE...] [-- ARGS...]: as run_env (in the
# settings below), MODE linked (no LD_PRELOAD) or preload, and under
# `timeout 30` (60 under a sanitizer, which makes 3000 threads take 15 s): a
# hang ends in exit status 124 and fails the status check. The bound only
# catches hangs: 3000 threads with a flush loop take 2 to 12 s on a loaded
# 2-core machine, with this library and the one before alike.
GUARD_S=30
[ -z "$SANITIZER" ] || GUARD_S=60
run_guarded() {
	local mode=$1 name=$2 bin=$3 t0 vars=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		vars+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	[ "$mode" = preload ] && vars=(LD_PRELOAD="$LIB" "${vars[@]}")
	RUNS=$((RUNS + 1))
	DIR=$T/run/$RUNS-$name
	TRACE=$DIR/trace.hookprof
	mkdir -p "$DIR"
	t0=$(now_ns)
	{ (cd "$DIR" && exec timeout $GUARD_S env HOOKPROF_OUTPUT="$TRACE" "${vars[@]}" "$B/$bin" "$@" >out 2>err); } 2>/dev/null
	RC=$?
	WALL_NS=$(($(now_ns) - t0))
}
# cat FIFO >OUT in the background, once it reads the FIFO: the runtime
# opens a FIFO without waiting, and takes one that nobody reads yet as no
# trace (on a loaded machine the reader came too late, and the test hung).
# A reader counts from when its open waits for a writer (the kernel's
# wait_for_partner), before the FIFO is among its descriptors.
start_fifo_reader() {
	cat "$1" >"$2" &
	reader=$!
	for _ in $(seq 1 1000); do
		[ "$(cat /proc/$reader/wchan 2>/dev/null)" = wait_for_partner ] && return 0
		readlink /proc/$reader/fd/* 2>/dev/null | grep -qxF -- "$1" && return 0
		sleep 0.01
	done
}
# Waits for it, 20 s at most: a writer that never came must not hang the run.
wait_fifo_reader() {
	for _ in $(seq 1 2000); do
		kill -0 $reader 2>/dev/null || break
		sleep 0.01
	done
	kill $reader 2>/dev/null
	wait $reader 2>/dev/null
}
# zero_lost LABEL: the report's header says the trace lost no event.
zero_lost() {
	"$HP" report "$TRACE" >"$DIR/table" 2>&1
	check "$1: no event lost (the report's header says 0 lost)" "$(head -n 2 "$DIR/table" | tr '\n' '|')" \
		grep -q '^#.*, 0 lost, ' "$DIR/table"
}

# Threads created and joined one after another: each one's buffer is
# retired and freed while the next ones start; with "flush", hookprof_flush
# on another thread races with all of that.
label="3000 short-lived threads, stream mode"
run_guarded linked manythreads manythreads_linked
check_run "$label" linked 0 "manythreads 3000"
if report "$label" "$TRACE"; then
	expect_calls "$label" manythreads_linked main=1 mt_thread=3000 mt_work=30000
	check_times "$label" flat
fi
for mode in stream ring; do
	label="3000 short-lived threads, hookprof_flush() in a loop meanwhile, $mode mode"
	run_guarded linked "manythreads-flush-$mode" manythreads_linked HOOKPROF_MODE=$mode -- flush
	check_run "$label" linked 0 "manythreads 3000 flushed"
	if report "$label" "$TRACE"; then
		expect_calls "$label" manythreads_linked main=1 mt_flusher=1 mt_thread=3000 mt_work=30000
		check_times "$label" flat
	fi
done

# An instrumented SIGALRM handler, up to 20000 times a second, interrupting
# main's hooks anywhere, their slow path too: every call of both is counted,
# none lost.
# Without the TSC every event takes the slow path (a different code path
# for the slot the hook took).
# The hook a handler interrupted between taking its slot and filling it
# fills it after the handler published the chunk: the writer waits for it
# (docs/design.md, "Slots filled late"; every access of a slot is atomic).
for clock in tsc monotonic; do
	label="instrumented SIGALRM handler every 50 us, HOOKPROF_CLOCK=$clock"
	run_guarded preload "sigtimer-$clock" sigtimer HOOKPROF_CLOCK=$clock
	n_loop="" n_sig=""
	read -r _ n_loop _ n_sig _ <"$DIR/out" 2>/dev/null
	check "$label: exit status 0" "got $RC; stderr: $(brief "$DIR/err")" [ "$RC" = 0 ]
	check "$label: program output 'sigtimer N calls M signals'" "got '$(brief "$DIR/out")'" \
		grep -Eqx 'sigtimer [0-9]+ calls [0-9]+ signals' "$DIR/out"
	check "$label: nothing on stderr" "stderr: $(brief "$DIR/err")" [ ! -s "$DIR/err" ]
	if report "$label" "$TRACE"; then
		expect_calls "$label" sigtimer main=1 sig_loop="${n_loop:-?}" sig_handler="${n_sig:-?}" sig_inner="${n_sig:-?}"
		check_times "$label" flat
		zero_lost "$label"
	fi
done

# exit() from two threads at once: the one that does not run the
# destructors must not end the process before the trace is complete. In
# ring mode the final flush writes every event (1.2 million, all in the
# buffers), which leaves the other thread plenty of time.
for mode in stream ring; do
	label="exit(5) from two threads at once, $mode mode"
	run_guarded preload "multiexit-$mode" multiexit HOOKPROF_MODE=$mode
	check_run "$label" preload 5 ""
	if report "$label (no --partial)" "$TRACE"; then
		expect_calls "$label" multiexit main=1 me_thread=2 me_work=600000
		check_times "$label" flat
	fi
done

# A child forked without the C library's fork runs no atfork handler: it
# must still exit (status 3), and leave the parent's trace to the parent.
# LeakSanitizer's exit check in a forked child can hang: it waits for an
# allocator lock another thread of the parent held at the fork (gcc 12's
# ASan takes none around fork), or for the writer thread a raw fork left in
# ASan's books. Not ours to check: off for the children that exit().
NO_LSAN="ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0"
if ! skipped_under thread -- "children of a raw fork" "TSan sees no fork there: the parent's writer thread is still in its books, and the child's re-initialised locks race with it"; then
	for how in syscall _Fork; do
		case $how in syscall) label="syscall(SYS_fork)" ;; *) label="_Fork()" ;; esac
		label="child of $label calling exit(3)"
		run_guarded preload "rawfork-$how" rawfork "$NO_LSAN" -- $how
		check_run "$label" preload 0 "rawfork child exit 3"
		if report "$label: the parent's trace" "$TRACE"; then
			expect_calls "$label: the parent's trace" rawfork main=1 rf_parent=200
			check "$label: the parent's trace holds none of the child's calls" "rf_child calls: $(field rf_child "" 2)" \
				[ -z "$(field rf_child "" 2)" ]
		fi
	done
fi

# Killed by SIGPIPE (a default action the program did not change): the
# trace is complete up to there.
label="killed by SIGPIPE (sigpipe | head -n 1)"
RUNS=$((RUNS + 1))
DIR=$T/run/$RUNS-sigpipe
TRACE=$DIR/trace.hookprof
mkdir -p "$DIR"
{ (
	cd "$DIR" || exit
	timeout $GUARD_S env HOOKPROF_OUTPUT="$TRACE" LD_PRELOAD="$LIB" "$B/sigpipe" 2>err | head -n 1 >out
	echo "${PIPESTATUS[0]}" >rc
); } 2>/dev/null
RC=$(cat "$DIR/rc" 2>/dev/null)
check_run "$label" preload 141 "sigpipe line 1"
if report "$label (no --partial)" "$TRACE"; then
	expect_calls "$label" sigpipe main=1 sp_setup=10
	n=$(field sp_line sigpipe 2)
	check "$label: sp_line in the report" "sp_line calls: '$n'" \
		awk -v n="$n" 'BEGIN { exit !(n ~ /^[0-9]+$/ && n + 0 >= 1) }'
	check_times "$label" flat
fi

# A fatal signal for a thread that waits for the writer (a full 128K
# buffer, stream mode): the writer still stops, the trace is complete, and
# no chunk is written twice: bs_work's calls are those the program counted.
label="SIGTERM for a thread that waits for the writer (HOOKPROF_BUFFER=128K)"
run_guarded linked blockedsig blockedsig_linked HOOKPROF_BUFFER=128K
n_work=""
read -r _ _ n_work <"$DIR/out" 2>/dev/null
check "$label: exit status 143" "got $RC; stderr: $(brief "$DIR/err")" [ "$RC" = 143 ]
check "$label: program output 'blockedsig waiting N'" "got '$(brief "$DIR/out")'" \
	grep -Eqx 'blockedsig waiting [0-9]+' "$DIR/out"
check "$label: nothing on stderr" "stderr: $(brief "$DIR/err")" [ ! -s "$DIR/err" ]
if report "$label (no --partial)" "$TRACE"; then
	expect_calls "$label" blockedsig_linked main=1 bs_setup=10 bs_watch=1 bs_worker=1 bs_work="${n_work:-?}"
	check_times "$label" flat
	zero_lost "$label"
fi

# hookprof_flush() that cannot write (the program deleted the trace file)
# says so: -1. At most one warning, and the file is not made again.
label="hookprof_flush() after the trace file was deleted"
run_guarded linked flushunlinked flushunlinked_linked
check "$label: exit status 0" "got $RC; stderr: $(brief "$DIR/err")" [ "$RC" = 0 ]
check "$label: returns -1" "got '$(brief "$DIR/out")', want 'flushunlinked -1'" \
	[ "$(cat "$DIR/out")" = "flushunlinked -1" ]
check "$label: stderr holds at most one line, a 'hookprof:' one" "stderr: $(brief "$DIR/err")" \
	sh -c '[ "$(wc -l <"$1")" -le 1 ] && ! grep -qv "^hookprof:" "$1"' sh "$DIR/err"
check "$label: no trace file made again" "files: $(ls "$DIR" | tr '\n' ' ')" [ ! -e "$TRACE" ]

# libhookprof loaded only as the dependency of a plugin opened with
# RTLD_DEEPBIND, and unloaded with it by dlclose (its thread exits after
# that); then SIGTERM: the process dies of SIGTERM, not of a jump into the
# unloaded library.
label="libhookprof unloaded by dlclose (RTLD_DEEPBIND plugin), then SIGTERM"
if ! skipped_under address thread -- "$label" "the sanitizer runtimes refuse RTLD_DEEPBIND"; then
	run_guarded linked deepbind deepbind -- "$B/plugin_linked.so"
	check_run "$label" linked 143 "deepbind 168 dlclose 0"
	if report "$label (no --partial)" "$TRACE"; then
		expect_calls "$label" plugin_linked.so plugin_run=2 plugin_helper=8
		check_times "$label" flat
	fi
fi

# A child forked by an exit handler calls exit(): it ends (the parent's
# being in exit() is not the child's), and the parent's trace is complete.
run_guarded preload forkexit forkexit "$NO_LSAN"
check_run "exit() in a child forked by an exit handler" preload 0 "forkexit child 2"
if report "exit() in a child forked by an exit handler" "$TRACE"; then
	expect_calls "exit() in a child forked by an exit handler" forkexit main=1 fe_work=1000
fi

# ---- settings -----------------------------------------------------------

# run_env NAME BIN VAR=VALUE... [-- ARGS...]: the binary (not linked) with the
# library preloaded and the given environment; HOOKPROF_OUTPUT is $TRACE
# unless given. ARGS go to the program.
run_env() {
	local name=$1 bin=$2 t0 vars=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		vars+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	RUNS=$((RUNS + 1))
	DIR=$T/run/$RUNS-$name
	TRACE=$DIR/trace.hookprof
	mkdir -p "$DIR"
	t0=$(now_ns)
	{ (cd "$DIR" && exec env HOOKPROF_OUTPUT="$TRACE" LD_PRELOAD="$LIB" "${vars[@]}" "$B/$bin" "$@" >out 2>err); } 2>/dev/null
	RC=$?
	WALL_NS=$(($(now_ns) - t0))
}

run_env ring nested_O0 HOOKPROF_MODE=ring
check_run "HOOKPROF_MODE=ring nested" preload 0 "$NESTED_OUT"
nested_checks "HOOKPROF_MODE=ring nested" nested_O0
run_env ring-threads threads HOOKPROF_MODE=ring
check_run "HOOKPROF_MODE=ring threads" preload 0 "threads done 1"
threads_checks "HOOKPROF_MODE=ring threads" threads
if ! skipped_under thread -- "HOOKPROF_MODE=ring HOOKPROF_BUFFER=128K recursion" "$DEEP_STACK"; then
	run_env ring-small recursion HOOKPROF_MODE=ring HOOKPROF_BUFFER=128K
	check_run "HOOKPROF_MODE=ring HOOKPROF_BUFFER=128K recursion (overflows)" preload 0 "recursion 100000 6765"
	if report "HOOKPROF_MODE=ring HOOKPROF_BUFFER=128K recursion" "$TRACE"; then
		check_times "HOOKPROF_MODE=ring HOOKPROF_BUFFER=128K recursion"
		n=$(field rec_fib recursion 2)
		check "ring mode keeps the last events: rec_fib (called last) is in the report, at most 21891 calls" \
			"rec_fib calls: '$n'" awk -v n="$n" 'BEGIN { exit !(n ~ /^[0-9]+$/ && n + 0 >= 1 && n + 0 <= 21891) }'
	fi
	check "ring mode: the report's header counts the events it lost" "$(brief "$T/ring-table.out")" \
		sh -c '"$1" report "$2" >"$3" && head -n 1 "$3" | grep -Eq ", [1-9][0-9]* lost, "' sh "$HP" "$TRACE" "$T/ring-table.out"
fi
# The flight recorder on a fatal signal: written by the handler.
run_env ring-segv ending HOOKPROF_MODE=ring -- segv
check_run "HOOKPROF_MODE=ring, segv() inside nested calls" preload 139 "ending segv"
ending_checks "HOOKPROF_MODE=ring, segv() inside nested calls" ending
# ... and when the program asks, then dies of SIGKILL (nothing else runs).
for mode in ring stream; do
	label="HOOKPROF_MODE=$mode, hookprof_flush() then SIGKILL"
	run_env "flushkill-$mode" flushkill_linked HOOKPROF_MODE=$mode
	check_run "$label" linked 137 "flushed 0 traced"
	check "$label: report without --partial refuses the trace, in one line" "$(brief "$T/fk.err")" \
		sh -c '! "$1" report "$2" >/dev/null 2>"$3" && [ "$(wc -l <"$3")" = 1 ] && grep -q "no end record" "$3"' \
		sh "$HP" "$TRACE" "$T/fk.err"
	if report "$label" --partial "$TRACE"; then
		expect_calls "$label" flushkill_linked main=1 fk_work=5
		check_times "$label"
	fi
done
if ! skipped_under thread -- "HOOKPROF_BUFFER=128K stream mode recursion" "$DEEP_STACK"; then
	run_env small-stream recursion HOOKPROF_BUFFER=128K
	check_run "HOOKPROF_BUFFER=128K stream mode recursion" preload 0 "recursion 100000 6765"
	recursion_checks "HOOKPROF_BUFFER=128K stream mode (lossless) recursion" recursion
fi
run_env monotonic nested_O2 HOOKPROF_CLOCK=monotonic
check_run "HOOKPROF_CLOCK=monotonic nested" preload 0 "$NESTED_OUT"
nested_checks "HOOKPROF_CLOCK=monotonic nested" nested_O2
run_env monotonic-threads threads HOOKPROF_CLOCK=monotonic
check_run "HOOKPROF_CLOCK=monotonic threads" preload 0 "threads done 1"
threads_checks "HOOKPROF_CLOCK=monotonic threads" threads

# ---- trace file names ---------------------------------------------------

# bg_run DIR BIN VAR=VALUE...: runs the linked binary in DIR and sets PID to its
# pid (the name of its trace file depends on it).
bg_run() {
	local dir=$1 bin=$2
	shift 2
	mkdir -p "$dir"
	(
		cd "$dir" || exit 1
		env "$@" "$B/$bin" >>out 2>>err &
		echo $! >pid
		wait $!
	) 2>/dev/null
	RC=$?
	PID=$(cat "$dir/pid" 2>/dev/null)
}

D=$T/names/default
bg_run "$D" nested_O0_linked
check "default name: ./<prog>-<pid>.hookprof in the working directory" "files: $(ls "$D" | tr '\n' ' ')" \
	[ -s "$D/nested_O0_linked-$PID.hookprof" ]
FIRST=$D/nested_O0_linked-$PID.hookprof
bg_run "$D" nested_O0_linked
SECOND=$D/nested_O0_linked-$PID.hookprof
check "two runs in one directory write two trace files" "files: $(ls "$D" | tr '\n' ' ')" \
	[ -s "$FIRST" -a -s "$SECOND" -a "$FIRST" != "$SECOND" -a "$(ls "$D" | grep -c '\.hookprof')" = 2 ]
if report "two traces of one program merged" "$FIRST" "$SECOND"; then
	expect_calls "two traces merged" nested_O0_linked main=2 nest_a=6 nest_b=12 nest_c=60
fi

D=$T/names/pattern
mkdir -p "$D"
bg_run "$D" nested_O0_linked HOOKPROF_OUTPUT="$D/x-%n.%p.trace"
check "HOOKPROF_OUTPUT with %n and %p" "files: $(ls "$D" | tr '\n' ' ')" [ -s "$D/x-nested_O0_linked.$PID.trace" ]

D=$T/names/dir
mkdir -p "$D/traces"
bg_run "$D" nested_O0_linked HOOKPROF_OUTPUT="$D/traces"
check "HOOKPROF_OUTPUT naming a directory" "files: $(ls "$D/traces" | tr '\n' ' ')" \
	[ -s "$D/traces/nested_O0_linked-$PID.hookprof" ]

D=$T/names/fixed
bg_run "$D" nested_O0_linked HOOKPROF_OUTPUT="$D/fixed.hookprof"
sum1=$(cksum <"$D/fixed.hookprof" 2>/dev/null)
bg_run "$D" nested_O2_linked HOOKPROF_OUTPUT="$D/fixed.hookprof"
bg_run "$D" nested_O2_linked HOOKPROF_OUTPUT="$D/fixed.hookprof"
check "an existing trace file is not overwritten: .1 and .2 are taken" "files: $(ls "$D" | tr '\n' ' ')" \
	[ -s "$D/fixed.hookprof" -a -s "$D/fixed.hookprof.1" -a -s "$D/fixed.hookprof.2" -a "$(cksum <"$D/fixed.hookprof")" = "$sum1" ]
if report "traces of two binaries" "$D/fixed.hookprof" "$D/fixed.hookprof.1" "$D/fixed.hookprof.2"; then
	expect_calls "traces of two binaries merged per module" nested_O0_linked main=1 nest_a=3 nest_b=6 nest_c=30
	expect_calls "traces of two binaries merged per module" nested_O2_linked main=2 nest_a=6 nest_b=12 nest_c=60
fi

# record without -o: the default name, announced on stderr.
D=$T/names/record
mkdir -p "$D"
t0=$(now_ns)
{ (cd "$D" && exec "$HP" record -- "$B/nested_O0" >out 2>err); } 2>/dev/null
RC=$?
WALL_NS=$(($(now_ns) - t0))
msg=$(cat "$D/err")
f=${msg#hookprof: trace written to }
case $f in /*) ;; *) f=$D/$f ;; esac
check "record without -o: exit status 0, one line 'hookprof: trace written to FILE'" "status $RC, stderr: $(brief "$D/err")" \
	[ "$RC" = 0 -a "$(wc -l <"$D/err")" = 1 -a "${msg#hookprof: trace written to }" != "$msg" -a -s "$f" ]
check "record without -o: the trace is ./<prog>-<pid>.hookprof" "named '$f', files: $(ls "$D" | tr '\n' ' ')" \
	[ "$(ls "$D" | grep -c -x 'nested_O0-[0-9][0-9]*\.hookprof')" = 1 -a "$(cd "${f%/*}" 2>/dev/null && pwd -P)" = "$(cd "$D" && pwd -P)" ]
TRACE=$f
nested_checks "record without -o" nested_O0

# ---- the human table ----------------------------------------------------

TRACE=$FIRST
"$HP" report "$TRACE" >"$T/table.out" 2>"$T/table.err"
rc=$?
check "report without --format: a table, exit status 0, nothing on stderr" "status $rc, stderr: $(brief "$T/table.err")" \
	[ $rc = 0 -a ! -s "$T/table.err" -a -s "$T/table.out" ]
check "report table: a row with nest_c and its 30 calls, none with a CSV header" "$(brief "$T/table.out")" \
	awk -v h="$HEADER" '$0 == h { csv = 1 } /(^|[^_a-z])nest_c([^_a-z]|$)/ { for (i = 1; i <= NF; i++) if ($i == "30") found = 1 } END { exit csv || !found }' "$T/table.out"

# ---- installed: make install, then the README's pkg-config line ----------

STAGE=$T/stage
if make -C "$ROOT" -s install BUILD="$BUILD" PREFIX=/opt/hp DESTDIR="$STAGE" >"$T/install.log" 2>&1; then
	missing=""
	for f in bin/hookprof lib/libhookprof.so lib/libhookprof.a include/hookprof.h lib/pkgconfig/hookprof.pc; do
		[ -f "$STAGE/opt/hp/$f" ] || missing="$missing $f"
	done
	check "install DESTDIR=… PREFIX=/opt/hp: every file in place" "missing:$missing" [ -z "$missing" ]
	check "install PREFIX=/opt/hp: hookprof.pc names that prefix" "$(brief "$STAGE/opt/hp/lib/pkgconfig/hookprof.pc")" \
		grep -qx 'prefix=/opt/hp' "$STAGE/opt/hp/lib/pkgconfig/hookprof.pc"
else
	nok "install DESTDIR=… PREFIX=/opt/hp" "$(brief "$T/install.log")"
fi
P=$T/prefix
if make -C "$ROOT" -s install BUILD="$BUILD" PREFIX="$P" >"$T/install.log" 2>&1; then
	ok "install PREFIX=$P"
	if flags=$(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --cflags --libs hookprof 2>"$T/pc.err") &&
		# shellcheck disable=SC2086 # the flags are words
		gcc "${IF[@]}" "${E2E_CFLAGS[@]}" -O1 "$SRC/nested.c" -o "$B/nested_pc" $flags >"$BUILD_LOG" 2>&1; then
		ok "installed: gcc -finstrument-functions prog.c \$(pkg-config --cflags --libs hookprof)"
		HP_SAVED=$HP
		HP=$P/bin/hookprof
		run linked installed-pc nested_pc
		check_run "installed, linked through pkg-config" linked 0 "$NESTED_OUT"
		nested_checks "installed, linked through pkg-config" nested_pc
		run record installed-record nested_O0
		check_run "installed hookprof record (finds ../lib/libhookprof.so)" record 0 "$NESTED_OUT"
		nested_checks "installed hookprof record" nested_O0
		HP=$HP_SAVED
	else
		nok "installed: build with pkg-config" "$(cat "$T/pc.err" 2>/dev/null) $(brief "$BUILD_LOG")"
	fi
else
	nok "install PREFIX=$P" "$(brief "$T/install.log")"
fi

# ---- separate debug files and rebuilt binaries ----------------------------

# Files are looked for by build-id: only the directories given here may
# answer, and no debuginfod server.
unset HOOKPROF_DEBUG_PATH DEBUGINFOD_URLS
DBG=$T/debug

# split_debug BIN: moves all of $B/BIN's debug info, and its symbol table,
# into $DBG/.build-id/xx/yyyy.debug, named by its build-id.
split_debug() {
	local bin=$B/$1 id
	id=$(readelf -n "$bin" 2>/dev/null | awk '$1 == "Build" && $2 == "ID:" { print $3; exit }')
	[ -n "$id" ] && mkdir -p "$DBG/.build-id/${id:0:2}" &&
		objcopy --only-keep-debug "$bin" "$DBG/.build-id/${id:0:2}/${id:2}.debug" &&
		strip --strip-all "$bin"
}

# A stripped binary: its names come from the debug file found by build-id.
if build nested_split gcc "${IF[@]}" -O0 "$SRC/nested.c"; then
	check "split debug info: nested_split stripped, its debug file in \$DBG/.build-id/" \
		"readelf -n, objcopy --only-keep-debug or strip --strip-all failed" split_debug nested_split
fi
run preload split nested_split
check_run "stripped binary" preload 0 "$NESTED_OUT"
if report "stripped binary, no HOOKPROF_DEBUG_PATH" "$TRACE"; then
	check "stripped binary, no HOOKPROF_DEBUG_PATH: no names (the symbol table is gone too)" \
		"rows: $(cut -f1 "$TSV" | tr '\n' ' ')" [ -z "$(field nest_c "" 2)" ]
fi
export HOOKPROF_DEBUG_PATH=$DBG
if report "stripped binary, HOOKPROF_DEBUG_PATH=\$DBG" "$TRACE"; then
	expect_calls "stripped binary, HOOKPROF_DEBUG_PATH=\$DBG" nested_split main=1 nest_a=3 nest_b=6 nest_c=30
fi
# The stripped file deleted as well: its debug file stands in for it.
rm -f "$B/nested_split"
if report "stripped binary deleted, HOOKPROF_DEBUG_PATH=\$DBG" "$TRACE"; then
	expect_calls "stripped binary deleted, HOOKPROF_DEBUG_PATH=\$DBG" nested_split main=1 nest_a=3 nest_b=6 nest_c=30
fi
unset HOOKPROF_DEBUG_PATH

# A binary rebuilt at the same path after its trace: the new file must lend
# no names, and one warning says why. -O2 instead of -O1 changes the code,
# hence the build-id.
build_id_of() { readelf -n "$1" 2>/dev/null | awk '$1 == "Build" && $2 == "ID:" { print $3; exit }'; }
# one_warning FILE PATH: FILE is one line, a hookprof warning about the
# build-id mismatch of PATH.
one_warning() {
	[ "$(wc -l <"$1")" = 1 ] && grep -q '^hookprof: warning: .*build-id mismatch' "$1" && grep -q -F -- "$2" "$1"
}
build nested_rebuilt gcc "${IF[@]}" -O1 "$SRC/nested.c"
run preload rebuilt nested_rebuilt
check_run "rebuilt binary" preload 0 "$NESTED_OUT"
old_id=$(build_id_of "$B/nested_rebuilt")
build nested_rebuilt gcc "${IF[@]}" -O2 -DEXTRA "$SRC/nested.c"
new_id=$(build_id_of "$B/nested_rebuilt")
check "rebuilt binary: the rebuild changed the build-id" "before '$old_id', after '$new_id'" \
	[ -n "$old_id" -a -n "$new_id" -a "$old_id" != "$new_id" ]
REBUILT=$(cd "$B" && pwd -P)/nested_rebuilt
R=$T/rebuilt
mkdir -p "$R"
"$HP" report --format=csv "$TRACE" >"$R/csv" 2>"$R/err"
rc=$?
check "rebuilt binary: report exits 0" "status $rc, stderr: $(brief "$R/err")" [ $rc = 0 ]
check "rebuilt binary: report prints exactly one 'hookprof: warning:' line, naming the file and the build-id mismatch" \
	"stderr: $(brief "$R/err")" one_warning "$R/err" "$REBUILT"
if csv_to_tsv "$R/csv" >"$R/tsv"; then
	check "rebuilt binary: no wrong names (no nest_*), every row is nested_rebuilt+0xOFFSET" \
		"rows: $(cut -f1 "$R/tsv" | tr '\n' ' ')" \
		awk -F'\t' '$1 !~ /^nested_rebuilt\+0x[0-9a-f]+$/ { bad = 1 } END { exit bad || NR == 0 }' "$R/tsv"
	check "rebuilt binary: the counts are still exact (1 3 6 30)" "calls: $(cut -f2 "$R/tsv" | sort -n | tr '\n' ' ')" \
		[ "$(cut -f2 "$R/tsv" | sort -n | tr '\n' ' ')" = "1 3 6 30 " ]
else
	nok "rebuilt binary: the report is valid CSV" "$(brief "$R/tsv")"
fi
"$HP" dump "$TRACE" >"$R/dump" 2>"$R/dump.err"
rc=$?
check "rebuilt binary: dump exits 0" "status $rc, stderr: $(brief "$R/dump.err")" [ $rc = 0 ]
check "rebuilt binary: dump prints the same one warning" "stderr: $(brief "$R/dump.err")" \
	one_warning "$R/dump.err" "$REBUILT"
check "rebuilt binary: dump shows no nest_* name" "$(grep -m 3 'nest_' "$R/dump" | tr '\n' '|')" \
	awk '/nest_/ { bad = 1 } !/^#/ { events++ } END { exit bad || events == 0 }' "$R/dump"

# ---- unwritable trace file ----------------------------------------------

for mode in linked preload; do
	D=$T/unwritable-$mode
	mkdir -p "$D"
	bin=nested_O0_linked
	pre=
	[ $mode = preload ] && bin=nested_O0 && pre=$LIB
	{ (cd "$D" && HOOKPROF_OUTPUT=/nonexistent/dir/x LD_PRELOAD=$pre exec "$B/$bin" >out 2>err); } 2>/dev/null
	RC=$?
	check "unwritable HOOKPROF_OUTPUT, $mode: the program runs normally" "status $RC, stdout '$(brief "$D/out")'" \
		[ $RC = 0 -a "$(cat "$D/out")" = "$NESTED_OUT" ]
	check "unwritable HOOKPROF_OUTPUT, $mode: exactly one 'hookprof:' line on stderr" "stderr: $(brief "$D/err")" \
		[ "$(wc -l <"$D/err")" = 1 -a "$(grep -c '^hookprof:' "$D/err")" = 1 ]
	check "unwritable HOOKPROF_OUTPUT, $mode: no file left behind" "files: $(ls "$D" | tr '\n' ' ')" \
		[ "$(ls "$D" | grep -v -x -e out -e err | wc -l)" = 0 ]
done

# ---- bad input ----------------------------------------------------------

BAD=$T/bad
mkdir -p "$BAD"
GOOD=$FIRST
: >"$BAD/empty.hookprof"
head -c 100 "$GOOD" >"$BAD/head100.hookprof"
size=$(wc -c <"$GOOD")
head -c $((size / 2)) "$GOOD" >"$BAD/half.hookprof"
head -c $((size - 3)) "$GOOD" >"$BAD/cut3.hookprof"
awk 'BEGIN { srand(42); for (i = 0; i < 8192; i++) printf "%c", int(rand() * 256) }' >"$BAD/random.hookprof"
{ head -c 32 "$GOOD"; awk 'BEGIN { srand(7); for (i = 0; i < 8192; i++) printf "%c", int(rand() * 256) }'; } >"$BAD/header-then-random.hookprof"
{ head -c 12 "$GOOD"; head -c 2000 /bin/ls; } >"$BAD/badheader.hookprof"

# bad_input DESC FILE [ARGS...]: `hookprof report ARGS` (default: FILE) must
# fail with one line on stderr that names FILE, and print nothing on stdout.
bad_input() {
	local desc=$1 file=$2 fmt
	shift 2
	[ $# -gt 0 ] || set -- "$file"
	for fmt in --format=csv ""; do
		"$HP" report $fmt "$@" >"$BAD/out" 2>"$BAD/err"
		local rc=$?
		check "bad input, $desc (${fmt:-table}): fails cleanly (1 line on stderr naming it, no stdout)" \
			"status $rc, stdout $(wc -c <"$BAD/out") bytes, stderr: $(brief "$BAD/err")" \
			[ $rc -ne 0 -a $rc -lt 128 -a ! -s "$BAD/out" -a "$(wc -l <"$BAD/err")" = 1 -a "$(grep -c -F -- "$file" "$BAD/err")" = 1 ]
	done
}
bad_input "missing file" "$BAD/missing.hookprof"
bad_input "empty file" "$BAD/empty.hookprof"
bad_input "trace cut at 100 bytes" "$BAD/head100.hookprof"
bad_input "trace cut in half" "$BAD/half.hookprof"
bad_input "trace without its last 3 bytes" "$BAD/cut3.hookprof"
bad_input "/bin/ls" /bin/ls
bad_input "random bytes" "$BAD/random.hookprof"
bad_input "file header then random bytes" "$BAD/header-then-random.hookprof"
bad_input "damaged file header" "$BAD/badheader.hookprof"
bad_input "a directory" "$BAD"
bad_input "a good trace then a missing one" "$BAD/missing.hookprof" "$GOOD" "$BAD/missing.hookprof"
bad_input "a good trace then a cut one" "$BAD/half.hookprof" "$GOOD" "$BAD/half.hookprof"

# ---- more sections --------------------------------------------------------
# Each tests/e2e/sections/NN-name.sh is one more group of checks, sourced in
# order: it uses build, run, check, report, expect_calls and the rest above.
for section in "$ROOT"/tests/e2e/sections/*.sh; do
	[ -e "$section" ] || continue
	# shellcheck source=/dev/null
	. "$section"
done

finish
