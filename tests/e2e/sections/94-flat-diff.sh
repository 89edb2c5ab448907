# shellcheck shell=bash
# 94-flat-diff.sh - `hookprof report` as the flat view: the shared filters
# with exact counts, the CSV's source column, the warnings about merges
# (the same trace twice, unrelated programs), --per-run and --per-thread;
# and `hookprof diff` of two builds whose call counts differ by
# construction, one run and three runs a side. Sourced by tests/e2e/run.sh.

FD=$T/flatdiff
mkdir -p "$FD"

# no_row LABEL FUNC...: no row of these functions in TSV.
no_row() {
	local label=$1 f
	shift
	for f in "$@"; do
		check "$label: no row for $f" "$(tr '\t' ' ' <"$TSV" | tr '\n' '|')" [ -z "$(field "$f" "" 2)" ]
	done
}

# warns LABEL FILE PATTERN: FILE (stderr) is exactly one line, matching PATTERN.
warns() {
	check "$1: one warning line on stderr" "stderr: $(brief "$2")" \
		[ "$(wc -l <"$2")" = 1 -a "$(grep -c -E -- "^hookprof: warning: .*$3" "$2")" = 1 ]
}

# nested: main calls nest_a 3 times, nest_a nest_b twice, nest_b nest_c 5 times.
run preload flat-nested nested_O0
check_run "flat view: nested" preload 0 "nested done 1"
NT=$TRACE
if report "report --function=nest_b" --function='^nest_b$' "$NT"; then
	expect_calls "--function=nest_b: it and what it calls" nested_O0 nest_b=6 nest_c=30
	no_row "--function=nest_b" main nest_a
fi
if report "report --exclude=nest_b" --exclude='^nest_b$' "$NT"; then
	expect_calls "--exclude=nest_b: the others, nest_c hanging from nest_a" nested_O0 main=1 nest_a=3 nest_c=30
	no_row "--exclude=nest_b" nest_b
fi
if report "report --depth=2" --depth=2 "$NT"; then
	expect_calls "--depth=2: main and what it calls" nested_O0 main=1 nest_a=3
	no_row "--depth=2" nest_b nest_c
fi
if report "report --depth=3 --exclude=nest_a" --depth=3 --exclude=nest_a "$NT"; then
	expect_calls "--depth=3 --exclude=nest_a: depth counts shown calls" nested_O0 main=1 nest_b=6 nest_c=30
fi
if report "report --time=0,3600" --time=0,3600 "$NT"; then
	expect_calls "--time=0,3600: every call" nested_O0 main=1 nest_a=3 nest_b=6 nest_c=30
fi
if report "report --min=1ns" --min=1ns "$NT"; then
	expect_calls "--min=1ns: every call" nested_O0 main=1 nest_a=3 nest_b=6 nest_c=30
fi
pid=$(sed -n '1s/^# .* (pid \([0-9]*\)):.*/\1/p' <("$HP" report "$NT" 2>/dev/null))
if report "report --thread=TID (the main thread)" --thread="$pid" "$NT"; then
	expect_calls "--thread=$pid: the one thread" nested_O0 main=1 nest_a=3 nest_b=6 nest_c=30
fi
for f in "--min=1000s" "--time=3000,3600" "--thread=999999999"; do
	"$HP" report --format=csv "$f" "$NT" >"$FD/none.csv" 2>"$FD/none.err"
	rc=$?
	check "report $f: no call passes: exit 0, the CSV header alone" "status $rc, $(brief "$FD/none.csv")" \
		[ $rc = 0 -a "$(tr -d '\r' <"$FD/none.csv")" = "$HEADER" ]
	warns "report $f" "$FD/none.err" "no call passes the filters"
done
"$HP" report --depth=0 "$NT" >/dev/null 2>"$FD/bad.err"
rc=$?
check "report --depth=0: a usage error in one line" "status $rc, $(brief "$FD/bad.err")" \
	[ $rc = 2 -a "$(wc -l <"$FD/bad.err")" = 1 ]
"$HP" report --thread= "$NT" >/dev/null 2>"$FD/bad.err"
rc=$?
check "report --thread= (empty): a usage error in one line" "status $rc, $(brief "$FD/bad.err")" \
	[ $rc = 2 -a "$(wc -l <"$FD/bad.err")" = 1 ]

# The source column: FILE:LINE of the function's start.
if report "report: the source column" "$NT"; then
	src=$(field nest_c nested_O0 9)
	decl=$(grep -n '^__attribute__((noinline)) void nest_c(' "$SRC/nested.c" | cut -d: -f1)
	line=${src##*:}
	check "source of nest_c is nested.c:LINE at its definition" "source '$src', definition at line $decl" \
		[ "${src%:*}" != "$src" -a "$(basename "${src%:*}")" = nested.c -a "$line" -ge "$decl" -a "$line" -le $((decl + 1)) ]
fi

# Merges that mislead: the same trace twice, a copy of it, unrelated programs.
"$HP" report --format=csv "$NT" "$NT" >"$FD/twice.csv" 2>"$FD/twice.err"
warns "the same trace twice" "$FD/twice.err" "are the same file: its calls are counted twice"
cp "$NT" "$FD/copy.hookprof"
"$HP" report --format=csv "$NT" "$FD/copy.hookprof" >"$FD/copy.csv" 2>"$FD/copy.err"
warns "a trace and its copy" "$FD/copy.err" "are the same trace \(one process, one start\)"
run preload flat-deepjump deepjump
RT=$TRACE
"$HP" report --format=csv "$NT" "$RT" >"$FD/two.csv" 2>"$FD/two.err"
warns "traces of two unrelated programs" "$FD/two.err" "\(nested_O0\) and .* \(deepjump\) are traces of unrelated programs"
"$HP" report --per-process --format=csv "$NT" "$RT" >"$FD/two.csv" 2>"$FD/two.err"
check "two unrelated programs, --per-process: no warning" "stderr: $(brief "$FD/two.err")" [ ! -s "$FD/two.err" ]

# --per-run: calls and self per run as more columns.
run preload flat-nested-2 nested_O0
NT2=$TRACE
"$HP" report --per-run --format=csv "$NT" "$NT2" >"$FD/runs.csv" 2>"$FD/runs.err"
check "--per-run CSV: the columns of two runs after source" "$(brief "$FD/runs.csv")" \
	[ "$(head -n 1 "$FD/runs.csv" | tr -d '\r')" = "$HEADER,calls_1,self_ns_1,calls_2,self_ns_2" -a ! -s "$FD/runs.err" ]
check "--per-run CSV: nest_c 60 calls, 30 in each run" "$(brief "$FD/runs.csv")" \
	awk -F, '$1 == "nest_c" && $2 == 60 && $10 == 30 && $12 == 30 { n++ } END { exit n != 1 }' "$FD/runs.csv"
"$HP" report --per-run "$NT" "$NT2" >"$FD/runs.table" 2>&1
check "--per-run table: calls#1 and calls#2 columns, nest_c 30 and 30" "$(brief "$FD/runs.table")" \
	awk '/calls#1/ && /self#2/ { head = 1 } / nest_c \[nested_O0\]$/ && $1 == 60 && $12 == 30 && $15 == 30 { row = 1 } END { exit !(head && row) }' "$FD/runs.table"

# Threads: the header says times are summed over them; --per-thread splits them.
run preload flat-threads threads
TT=$TRACE
"$HP" report "$TT" >"$FD/threads.table" 2>&1
check "report of 9 threads: the header says times are summed over threads" "$(brief "$FD/threads.table")" \
	grep -q '^# times are wall-clock, summed over threads' "$FD/threads.table"
"$HP" report --per-thread --format=csv "$TT" >"$FD/pt.csv" 2>"$FD/pt.err"
check "--per-thread: 9 sections, 8 with thr_worker 1 call and thr_work 1000" "$(brief "$FD/pt.csv")" \
	awk -F, '/^## thread / { s++ } $1 == "thr_worker" && $2 == 1 { w++ } $1 == "thr_work" && $2 == 1000 { k++ } $1 == "main" && $2 == 1 { m++ }
		END { exit !(s == 9 && w == 8 && k == 8 && m == 1) }' "$FD/pt.csv"
pid=$(sed -n '1s/^# .* (pid \([0-9]*\)):.*/\1/p' "$FD/threads.table")
if report "threads --thread=main's tid" --thread="$pid" "$TT"; then
	expect_calls "--thread=TID of main: main only" threads main=1
	no_row "--thread=TID of main" thr_worker thr_work
fi

# ---- diff --------------------------------------------------------------------

build diffcalls_10 gcc "${IF[@]}" -O0 -DDC_N=10 "$SRC/diffcalls.c"
build diffcalls_25 gcc "${IF[@]}" -O0 -DDC_N=25 "$SRC/diffcalls.c"
mkdir -p "$FD/old" "$FD/new"
for i in 1 2 3; do
	run preload diff-old-$i diffcalls_10
	cp "$TRACE" "$FD/old/run$i.hookprof"
	run preload diff-new-$i diffcalls_25
	cp "$TRACE" "$FD/new/run$i.hookprof"
done
"$HP" diff --format=csv "$FD/old/run1.hookprof" "$FD/new/run1.hookprof" >"$FD/diff.csv" 2>"$FD/diff.err"
rc=$?
check "diff of two builds: exit 0, nothing on stderr" "status $rc, $(brief "$FD/diff.err")" [ $rc = 0 -a ! -s "$FD/diff.err" ]
check "diff CSV: the header begins function,old_calls,new_calls" "$(brief "$FD/diff.csv")" \
	[ "$(head -n 1 "$FD/diff.csv" | cut -d, -f1-9)" = "function,old_calls,new_calls,old_self_ns,new_self_ns,delta_self_ns,old_total_ns,new_total_ns,delta_total_ns" ]
check "diff CSV: dc_leaf 40 -> 100 calls, dc_mid 4 -> 4, main 1 -> 1; 3 rows" "$(brief "$FD/diff.csv")" \
	awk -F, 'NR > 1 { n++ } $1 == "dc_leaf" && $2 == 40 && $3 == 100 { a++ } $1 == "dc_mid" && $2 == 4 && $3 == 4 { b++ }
		$1 == "main" && $2 == 1 && $3 == 1 { c++ } END { exit !(n == 3 && a == 1 && b == 1 && c == 1) }' "$FD/diff.csv"
"$HP" diff --format=csv --exclude=dc_mid "$FD/old/run1.hookprof" "$FD/new/run1.hookprof" >"$FD/diffx.csv" 2>"$FD/diff.err"
check "diff --exclude=dc_mid: main and dc_leaf only (filters apply)" "$(brief "$FD/diffx.csv")" \
	awk -F, 'NR > 1 { n++ } $1 == "dc_leaf" && $2 == 40 && $3 == 100 { a++ } $1 == "dc_mid" { b++ } END { exit !(n == 2 && a == 1 && !b) }' "$FD/diffx.csv"
"$HP" diff --format=csv "$FD/old" "$FD/new" >"$FD/diff3.csv" 2>"$FD/diff3.err"
rc=$?
check "diff of 3 runs a side: exit 0, nothing on stderr" "status $rc, $(brief "$FD/diff3.err")" [ $rc = 0 -a ! -s "$FD/diff3.err" ]
check "diff of 3 runs a side: means per run 40 -> 100, 3 runs each, a spread and a noise verdict" "$(brief "$FD/diff3.csv")" \
	awk -F, '{ sub(/\r$/, "") }
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$1 == "dc_leaf" && $2 == 40 && $3 == 100 && $(col["old_runs"]) == 3 && $(col["new_runs"]) == 3 &&
		$(col["old_self_min_ns"]) <= $(col["old_self_max_ns"]) && $(col["new_self_min_ns"]) <= $(col["new_self_max_ns"]) &&
		$(col["noise"]) ~ /^(yes|no)$/ { ok = 1 } END { exit !ok }' "$FD/diff3.csv"
"$HP" diff "$FD/old" "$FD/new" >"$FD/diff3.table" 2>&1
check "diff table of 3 runs a side: the spread min..max for dc_leaf" "$(brief "$FD/diff3.table")" \
	grep -Eq '^ +40 +100 .*\.\..*\.\..*  dc_leaf$' "$FD/diff3.table"
"$HP" diff --format=csv "$FD/old" "$FD/old" >"$FD/same.csv" 2>"$FD/same.err"
check "diff of the same 3 runs on both sides: every change 0, every one within the noise" "$(brief "$FD/same.csv")" \
	awk -F, '{ sub(/\r$/, "") } NR > 1 { n++; if ($2 != $3 || $6 != 0 || $NF != "yes") bad = 1 } END { exit bad || n != 3 }' "$FD/same.csv"
"$HP" diff "$FD/old" >/dev/null 2>"$FD/diff1.err"
rc=$?
check "diff with one operand: a usage error in one line" "status $rc, $(brief "$FD/diff1.err")" \
	[ $rc = 2 -a "$(wc -l <"$FD/diff1.err")" = 1 ]
