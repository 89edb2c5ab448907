# shellcheck shell=bash
# 98-filter.sh - recording less (issue 7): HOOKPROF_EXCLUDE, INCLUDE, DEPTH
# and MIN with exact counts on filter.c (linked, preloaded, clang), a
# longjmp out of an excluded, an included and a too deep subtree, C++ names
# demangled, a function of a dlopen'ed plugin, bad settings (one warning,
# the program untouched), `hookprof record --exclude ...`, and what info
# and report say of a filtered trace. Sourced by tests/e2e/run.sh.

build filter_linked gcc "${IF[@]}" -O1 "$SRC/filter.c" "${LINK[@]}"
build filter gcc "${IF[@]}" -O1 "$SRC/filter.c"
FLT_BINS="filter_linked:linked filter:preload"
if [ "$HAVE_CLANG" = 1 ]; then
	build filter_clang clang -finstrument-functions -g -O1 "$SRC/filter.c"
	FLT_BINS="$FLT_BINS filter_clang:preload"
fi

# flt_run MODE LABEL BIN VAR=VALUE... [-- ARGS...]: run with those variables.
flt_run() {
	local mode=$1 label=$2 bin=$3 v vars=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
	[ "${1:-}" = -- ] && shift
	for v in "${vars[@]}"; do export "${v?}"; done
	run "$mode" "$label" "$bin" "$@"
	for v in "${vars[@]}"; do unset "${v%%=*}"; done
}

# flt_sum LEFT KEPT TOTAL: LEFT is a number and LEFT + KEPT = TOTAL.
flt_sum() {
	case $1 in '' | *[!0-9]*) return 1 ;; esac
	[ $(($1 + $2)) = "$3" ]
}

# flt_absent LABEL FUNC...: no row of these functions.
flt_absent() {
	local label=$1 f
	shift
	for f in "$@"; do
		check "$label: $f not recorded" "rows: $(cut -f1,2 "$TSV" | tr '\t\n' '= ')" \
			[ -z "$(field "$f" "" 2)" ]
	done
}

# The calls of filter.c with no filter (its header comment).
FLT_ALL="main=1 compress=3 hot_leaf=300 encode_block=6 put_bits=30 jumper=2 jump_deep=2 jump_leaf=2 after_jump=4 tiny=4 napper=3 quick=7"

# flt_case LABEL MODE BIN "VAR=VALUE..." "FUNC=N..." "ABSENT...": a run, its
# exit status and output untouched, then exact counts and absent functions.
flt_case() {
	local label=$1 mode=$2 bin=$3 vars=$4 calls=$5 absent=$6
	# shellcheck disable=SC2086
	flt_run "$mode" "$label" "$bin" $vars
	check_run "$label" "$mode" 0 "filter 1"
	report "$label" "$TRACE" || return
	# shellcheck disable=SC2086
	expect_calls "$label" "" $calls
	# shellcheck disable=SC2086
	flt_absent "$label" $absent
	check_times "$label"
}

for pair in $FLT_BINS; do
	bin=${pair%%:*}
	mode=${pair##*:}
	l="filter $bin"
	flt_case "$l: no filter" "$mode" "$bin" "" "$FLT_ALL" ""
	"$HP" report "$TRACE" >"$DIR/report.txt" 2>&1
	check "$l: no filter: report says nothing of filters" "$(brief "$DIR/report.txt")" \
		[ "$(grep -c 'filters' "$DIR/report.txt")" = 0 ]
	flt_case "$l: exclude a leaf" "$mode" "$bin" "HOOKPROF_EXCLUDE=^hot_leaf$" \
		"main=1 compress=3 encode_block=6 put_bits=30 jumper=2 jump_deep=2 jump_leaf=2 after_jump=4 tiny=4 napper=3 quick=7" \
		"hot_leaf"
	"$HP" report "$TRACE" >"$DIR/report.txt" 2>&1
	check "$l: exclude: report says so under its table" "$(brief "$DIR/report.txt")" \
		grep -q "^# recorded with filters (exclude '^hot_leaf\$'): the counts are of the calls recorded" "$DIR/report.txt"
	"$HP" info "$TRACE" >"$DIR/info.txt" 2>&1
	check "$l: exclude: info shows the filter" "$(brief "$DIR/info.txt")" \
		grep -qx "filters:  exclude '^hot_leaf\$'" "$DIR/info.txt"
	flt_case "$l: exclude a subtree" "$mode" "$bin" "HOOKPROF_EXCLUDE=^compress$,^napper$" \
		"main=1 jumper=2 jump_deep=2 jump_leaf=2 after_jump=4 tiny=4 quick=7" \
		"compress hot_leaf encode_block put_bits napper"
	flt_case "$l: include" "$mode" "$bin" "HOOKPROF_INCLUDE=^encode_block$,^tiny$" \
		"encode_block=6 put_bits=30 tiny=4" "main compress hot_leaf after_jump napper quick jumper"
	flt_case "$l: include and exclude" "$mode" "$bin" "HOOKPROF_INCLUDE=^compress$ HOOKPROF_EXCLUDE=^put_bits$" \
		"compress=3 hot_leaf=300 encode_block=6" "main put_bits quick napper"
	flt_case "$l: depth 2" "$mode" "$bin" "HOOKPROF_DEPTH=2" \
		"main=1 compress=3 jumper=2 after_jump=4 napper=3 quick=7" \
		"hot_leaf encode_block put_bits jump_deep jump_leaf tiny"
	# longjmp from jump_leaf to main skips three exits
	flt_case "$l: longjmp out of an excluded subtree" "$mode" "$bin" "HOOKPROF_EXCLUDE=^jump_deep$" \
		"main=1 jumper=2 after_jump=4 tiny=4 napper=3 quick=7 compress=3" "jump_deep jump_leaf"
	flt_case "$l: longjmp out of an included subtree" "$mode" "$bin" "HOOKPROF_INCLUDE=^jumper$" \
		"jumper=2 jump_deep=2 jump_leaf=2" "main after_jump tiny napper quick compress"
	flt_case "$l: longjmp out of recorded levels (depth 3)" "$mode" "$bin" "HOOKPROF_DEPTH=3" \
		"main=1 jumper=2 jump_deep=2 after_jump=4 tiny=4 compress=3 hot_leaf=300 encode_block=6" \
		"jump_leaf put_bits"
	# MIN: napper sleeps 2 ms; the leaves return at once. A leaf preempted
	# for over 1 ms stays, so the leaves kept and the calls left out add up
	# to their 341 calls exactly; the callers (they have callees) all stay.
	flt_case "$l: min 1ms" "$mode" "$bin" "HOOKPROF_MIN=1ms" \
		"main=1 compress=3 encode_block=6 napper=3 after_jump=4 jumper=2 jump_deep=2 jump_leaf=2" ""
	kept=0
	for f in hot_leaf put_bits quick tiny; do
		n=$(field "$f" "" 2)
		kept=$((kept + ${n:-0}))
	done
	"$HP" report "$TRACE" >"$DIR/report.txt" 2>&1
	left=$(sed -n 's/^# min left out \([0-9]*\) calls shorter than 1000000 ns with no callee (.*)$/\1/p' "$DIR/report.txt")
	check "$l: min: the calls left out ($left) and the leaves kept ($kept) are the 341 leaf calls" \
		"$(brief "$DIR/report.txt")" flt_sum "$left" "$kept" 341
	"$HP" info "$TRACE" >"$DIR/info.txt" 2>&1
	check "$l: min: info shows the filter and what it left out" "$(brief "$DIR/info.txt")" \
		grep -qE "^          min left out $left calls, [0-9]+ ns in all$" "$DIR/info.txt"
done

# Bad settings: one warning line each, the program runs as without them.
for setting in "HOOKPROF_EXCLUDE=x(:HOOKPROF_EXCLUDE: 'x(' is not a regular expression" \
	"HOOKPROF_INCLUDE=[:HOOKPROF_INCLUDE: '\[' is not a regular expression" \
	"HOOKPROF_DEPTH=deep:HOOKPROF_DEPTH='deep' is not a depth" \
	"HOOKPROF_MIN=10 us:HOOKPROF_MIN='10 us' is not a duration"; do
	var=${setting%%:*}
	want=${setting#*:}
	l="filter: bad ${var%%=*}"
	export "$var"
	run preload "bad-filter" filter
	unset "${var%%=*}"
	check "$l: exit status 0" "got $RC" [ "$RC" = 0 ]
	check "$l: program output" "got '$(brief "$DIR/out")'" [ "$(cat "$DIR/out")" = "filter 1" ]
	check "$l: one warning line" "stderr: $(brief "$DIR/err")" \
		[ "$(wc -l <"$DIR/err")" = 1 -a "$(grep -c "^hookprof: $want" "$DIR/err")" = 1 ]
	if report "$l" "$TRACE"; then
		# shellcheck disable=SC2086
		expect_calls "$l" "" $FLT_ALL
	fi
	case $var in HOOKPROF_EXCLUDE=* | HOOKPROF_INCLUDE=*)
		"$HP" report "$TRACE" >"$DIR/table" 2>&1
		check "$l: the report names no filter (none was applied)" "$(grep -m1 'recorded with filters' "$DIR/table")" \
			bash -c '! grep -q "recorded with filters" "$1"' sh "$DIR/table" ;;
	esac
done

# A bad pattern beside a good one: the good one applies, and only it is
# named where the report says which filters the trace was recorded with.
l="filter: a bad regex beside a good one"
flt_run preload "filter-bad-and-good" filter 'HOOKPROF_EXCLUDE=x(,^hot_leaf$'
check "$l: exit status 0, one warning" "status $RC; stderr: $(brief "$DIR/err")" \
	all_of [ "$RC" = 0 ] -- [ "$(wc -l <"$DIR/err")" = 1 ]
if report "$l" "$TRACE"; then
	expect_calls "$l" "" main=1 compress=3 encode_block=6 put_bits=30 tiny=4 quick=7
	flt_absent "$l" hot_leaf
fi
"$HP" report "$TRACE" >"$DIR/report.txt" 2>&1
check "$l: the report names the good one only" "$(grep -m1 'recorded with filters' "$DIR/report.txt")" \
	grep -q "^# recorded with filters (exclude '^hot_leaf\$'): the counts" "$DIR/report.txt"

# C++: the names as the report prints them, demangled by the runtime.
flt_run preload "filter-cxx" cxx "HOOKPROF_EXCLUDE=geo::Shape::(area|scale)"
check_run "filter C++" preload 0 "cxx 42 1"
if report "filter C++" "$TRACE"; then
	expect_calls "filter C++" "" main=1 "geo::Shape::Shape(double, double)=1" "int geo::twice<int>(int)=7" \
		"double geo::twice<double>(double)=2"
	flt_absent "filter C++" "geo::Shape::area() const" "geo::Shape::scale(double, double)"
fi
flt_run linked "filter-cxx-include" cxx_linked "HOOKPROF_INCLUDE=^int geo::twice<int>\(int\)$"
check_run "filter C++ include" linked 0 "cxx 42 1"
if report "filter C++ include" "$TRACE"; then
	expect_calls "filter C++ include" "" "int geo::twice<int>(int)=7"
	flt_absent "filter C++ include" main "double geo::twice<double>(double)"
fi

# A function of a plugin dlopen'ed after the start: its symbols are read then.
flt_run preload "filter-plugin" useplugin "HOOKPROF_EXCLUDE=^plugin_helper$" -- "$B/plugin.so"
check_run "filter plugin" preload 0 "useplugin 168"
if report "filter plugin" "$TRACE"; then
	expect_calls "filter plugin" "" main=1 call_plugin=2 plugin_run=2
	flt_absent "filter plugin" plugin_helper
fi
flt_run preload "filter-plugin-close" useplugin "HOOKPROF_INCLUDE=^plugin_run$" -- "$B/plugin.so" close
check_run "filter plugin, dlclose" preload 0 "useplugin 168"
if report "filter plugin, dlclose" "$TRACE"; then
	expect_calls "filter plugin, dlclose" "" plugin_run=2 plugin_helper=8
	flt_absent "filter plugin, dlclose" main call_plugin
fi

# hookprof record sets the variables.
RUNS=$((RUNS + 1))
DIR=$T/run/$RUNS-filter-record
TRACE=$DIR/trace.hookprof
mkdir -p "$DIR"
(cd "$DIR" && exec "$HP" record -o "$TRACE" --exclude='^hot_leaf$,^put_bits$' --depth=3 --min=0 \
	-- "$B/filter" >out 2>err)
RC=$?
check_run "filter: record --exclude --depth" record 0 "filter 1"
if report "filter: record --exclude --depth" "$TRACE"; then
	expect_calls "filter: record --exclude --depth" "" main=1 compress=3 encode_block=6 jumper=2 \
		jump_deep=2 after_jump=4 tiny=4
	flt_absent "filter: record --exclude --depth" hot_leaf put_bits jump_leaf
fi
"$HP" record --exclude='a(' -- "$B/filter" >"$DIR/bad.out" 2>"$DIR/bad.err"
RC=$?
check "filter: record --exclude with a bad regex is a usage error" "status $RC; $(brief "$DIR/bad.err")" \
	all_of [ "$RC" = 2 ] -- [ ! -s "$DIR/bad.out" ] -- \
	grep -q "^hookprof: --exclude: 'a(' is not a regular expression" "$DIR/bad.err"
"$HP" record --help >"$DIR/help.out" 2>&1
check "filter: record --help lists --exclude --include --depth --min" "$(brief "$DIR/help.out")" \
	[ "$(grep -c -e '--exclude=RE' -e '--include=RE' -e '--depth=N' -e '--min=DURATION' "$DIR/help.out")" = 4 ]

# Threads: each keeps its own levels. thr_worker is level 1 of each thread.
flt_run preload "filter-threads" threads "HOOKPROF_INCLUDE=^thr_worker$" "HOOKPROF_DEPTH=1"
check_run "filter threads" preload 0 "threads done 1"
if report "filter threads" "$TRACE"; then
	expect_calls "filter threads" "" thr_worker=8
	flt_absent "filter threads" main thr_work
fi
flt_run linked "filter-threads-exclude" threads_linked "HOOKPROF_EXCLUDE=^thr_work$"
check_run "filter threads exclude" linked 0 "threads done 1"
if report "filter threads exclude" "$TRACE"; then
	expect_calls "filter threads exclude" "" main=1 thr_worker=8
	flt_absent "filter threads exclude" thr_work
fi

# An exception out of an excluded and an included subtree (clang runs no
# exit hooks while unwinding; g++ does).
FLT_THROW=throw
[ "$HAVE_CLANG" = 1 ] && FLT_THROW="$FLT_THROW throw_clang"
for bin in $FLT_THROW; do
	flt_run preload "filter-$bin-exclude" "$bin" "HOOKPROF_EXCLUDE=^thr_a\("
	check_run "filter $bin: exception out of an excluded subtree" preload 0 "throw 4"
	if report "filter $bin: exception out of an excluded subtree" "$TRACE"; then
		expect_calls "filter $bin: exception out of an excluded subtree" "" main=1 "thr_catch(int)=4" \
			"thr_after()=1"
		flt_absent "filter $bin: exception out of an excluded subtree" "thr_a(int)" "thr_b(int)"
	fi
	flt_run preload "filter-$bin-include" "$bin" "HOOKPROF_INCLUDE=^thr_a\("
	check_run "filter $bin: exception out of an included subtree" preload 0 "throw 4"
	if report "filter $bin: exception out of an included subtree" "$TRACE"; then
		expect_calls "filter $bin: exception out of an included subtree" "" "thr_a(int)=4" "thr_b(int)=4"
		flt_absent "filter $bin: exception out of an included subtree" main "thr_catch(int)" "thr_after()"
	fi
done
