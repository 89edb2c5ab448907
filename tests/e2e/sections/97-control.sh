# tests/e2e/sections/97-control.sh - the control API of hookprof.h (issue 7):
# regions counted as frames named [name], paused and stopped time left out
# of the functions around it, region repairs told once each, marks and
# values in dump, report --values, HOOKPROF_START=off with start/stop, the
# API from several threads and from C++, and a program that uses the API
# without the library at all. (Sourced by tests/e2e/run.sh.)

CTL_INC=(-I"$INC")
build control_linked gcc "${IF[@]}" -O1 -pthread "$SRC/control.c" "${LINK[@]}"
build control gcc "${IF[@]}" -O1 -pthread "${CTL_INC[@]}" "$SRC/control.c"
# The API without hookprof: no -finstrument-functions, no library.
build control_nolib gcc -O2 -pthread -Wall -Werror "${CTL_INC[@]}" "$SRC/control.c"
build control_nolib_cxx g++ -O2 -Wall -Werror "${CTL_INC[@]}" "$SRC/control_cxx.cpp"
build control_phase gcc "${IF[@]}" -O1 "${CTL_INC[@]}" "$SRC/control_phase.c"
build control_cxx g++ "${IF[@]}" -O1 "${CTL_INC[@]}" "$SRC/control_cxx.cpp"
build control_cxx_linked g++ "${IF[@]}" -O0 "$SRC/control_cxx.cpp" "${LINK[@]}"

# ctl_ns FUNC: total_ns of FUNC's row in TSV, as an integer.
ctl_ns() { field "$1" "" 3 | cut -d. -f1; }
# ctl_below N LIMIT: N is a number below LIMIT.
ctl_below() { case $1 in '' | *[!0-9]*) return 1 ;; esac; [ "$1" -lt "$2" ]; }

# The regions, pauses and threads of control.c, however the library came in.
control_checks() { # LABEL MODE BIN
	local label=$1 mode=$2 bin=$3
	run "$mode" "$label" "$bin"
	check_run "$label" "$mode" 0 done
	report "$label" "$TRACE" || return
	expect_calls "$label" region "[parse]=5" "[tokenize]=10" "[work]=8"
	expect_calls "$label" "" parse=5 sleeper=1 nested_sleeper=1 worker=2
	# 10 from parse, 8 from the workers; the 2 in nested_sleeper ran paused
	expect_calls "$label" "" tokenize=18
	check_times "$label"
	# 300 ms (100 ms) asleep between pause and resume: well under 100 ms is
	# left (a bound that cannot flake, not a timing)
	local s n
	s=$(ctl_ns sleeper)
	n=$(ctl_ns nested_sleeper)
	check "$label: paused time is not sleeper's (total ${s} ns < 100 ms)" "sleeper $s ns" \
		ctl_below "$s" 100000000
	check "$label: nested pauses: not nested_sleeper's (total ${n} ns < 50 ms)" "nested_sleeper $n ns" \
		ctl_below "$n" 50000000
	"$HP" info "$TRACE" >"$DIR/info" 2>&1
	check "$label: hookprof_thread_name and pthread_setname_np name the threads" "$(brief "$DIR/info")" \
		all_of grep -q ' ctl-worker-1 ' "$DIR/info" -- grep -q ' ctl-worker-2 ' "$DIR/info"
}

control_checks control-linked linked control_linked
control_checks control-preload preload control
control_checks control-record record control

# ---- marks and values in dump, report --values ------------------------------
run linked control-values control_linked
"$HP" dump "$TRACE" >"$DIR/dump" 2>"$DIR/dump.err"
rc=$?
check "control dump: exit status 0, nothing on stderr" "status $rc, $(brief "$DIR/dump.err")" \
	all_of [ $rc = 0 ] -- [ ! -s "$DIR/dump.err" ]
check "control dump: the three marks, in order" "$(grep ' mark ' "$DIR/dump" | head -3 | tr '\n' '|')" \
	[ "$(grep ' mark step' "$DIR/dump" | cut -d' ' -f3- | tr '\n' '|')" = "mark step 1 of three|mark step 2 of three|mark step 3 of three|" ]
long=$(printf 'x%.0s' $(seq 252))
check "control dump: a long mark is cut at 255 bytes, ending in ..." "$(grep -c ' mark x' "$DIR/dump")" \
	grep -qx "[0-9]* [0-9-]* mark $long\.\.\." "$DIR/dump"
check "control dump: the values, in order" "$(grep ' value queue' "$DIR/dump" | tr '\n' '|')" \
	[ "$(grep ' value queue ' "$DIR/dump" | cut -d' ' -f3- | tr '\n' '|')" = "value queue 10|value queue 20|value queue 60|" ]
check "control dump: 8 values of thread_v from the two threads" "$(grep -c ' value thread_v ' "$DIR/dump")" \
	[ "$(grep -c ' value thread_v ' "$DIR/dump")" = 8 ]
check "control dump: one pause per outermost pause, and its resume" "$(grep -c ' pause$' "$DIR/dump")" \
	[ "$(grep -c ' pause$' "$DIR/dump") $(grep -c ' resume$' "$DIR/dump")" = "2 2" ]
"$HP" report --values "$TRACE" >"$DIR/values" 2>"$DIR/values.err"
rc=$?
check "control report --values: exit 0, nothing on stderr" "status $rc, $(brief "$DIR/values.err")" \
	all_of [ $rc = 0 ] -- [ ! -s "$DIR/values.err" ]
want_values='3 10 60 30 queue|2 -5 5 0 neg|8 1 4 2.5 thread_v|1 -9000000000000000000 -9000000000000000000 -9e+18 big|'
got_values=$(awk 'NR > 1 { print $1, $2, $3, $4, $5 }' "$DIR/values" | sort -k5 | tr '\n' '|')
want_sorted=$(echo "$want_values" | tr '|' '\n' | sed '/^$/d' | sort -k5 | tr '\n' '|')
check "control report --values: count, min, max, mean per name exact" "got '$got_values'" \
	[ "$got_values" = "$want_sorted" ]
"$HP" report --values --format=csv "$TRACE" >"$DIR/values.csv" 2>&1
check "control report --values --format=csv" "$(brief "$DIR/values.csv")" \
	grep -qx 'queue,3,10,60,30' "$DIR/values.csv"

# ---- region repairs: one warning line each ----------------------------------
run linked control-repair control_linked repair
check_run control-repair linked 0 done
"$HP" report "$TRACE" >"$DIR/rep" 2>"$DIR/rep.err"
tid=$(awk '/^# tid/ { next } { print $1; exit }' < <("$HP" dump "$TRACE" 2>/dev/null))
check "control repair: report works" "$(brief "$DIR/rep.err")" [ -s "$DIR/rep" ]
check "control repair: three warning lines, one per repair" "$(brief "$DIR/rep.err")" \
	[ "$(wc -l <"$DIR/rep.err")" = 3 ]
for want in "region [orphan] on thread $tid (control_linked): ended without a begin (the end is ignored)" \
	"region [unended] on thread $tid (control_linked): not ended when its function returned (ended there)" \
	"region [inner] on thread $tid (control_linked): still open when an enclosing region ended (ended there)"; do
	check "control repair: '$want'" "$(brief "$DIR/rep.err")" grep -qxF "hookprof: warning: $TRACE: $want" "$DIR/rep.err"
done
# Not report(), which insists on an empty stderr: the warnings are the point.
"$HP" report --format=csv "$TRACE" >"$DIR/rep.csv" 2>/dev/null
TSV=$DIR/rep.tsv
csv_to_tsv "$DIR/rep.csv" >"$TSV"
rc=$?
check "control repair: the CSV report reads" "$(brief "$TSV")" [ $rc = 0 ]
expect_calls control-repair region "[unended]=1" "[outer]=1" "[inner]=1"
check "control repair: no row for the region that never began" "$(rows_of '[orphan]')" \
	[ -z "$(rows_of '[orphan]')" ]

# ---- HOOKPROF_START=off, hookprof_start and hookprof_stop --------------------
for mode in preload record; do
	label=control-phase-$mode
	RUNS=$((RUNS + 1))
	DIR=$T/run/$RUNS-$label
	TRACE=$DIR/trace.hookprof
	mkdir -p "$DIR"
	if [ $mode = preload ]; then
		(cd "$DIR" && HOOKPROF_START=off HOOKPROF_OUTPUT=$TRACE LD_PRELOAD=$LIB exec "$B/control_phase" >out 2>err)
	else
		(cd "$DIR" && HOOKPROF_START=off exec "$HP" record -o "$TRACE" -- "$B/control_phase" >out 2>err)
	fi
	RC=$?
	check_run "$label" $mode 0 done
	report "$label" "$TRACE" || continue
	expect_calls "$label" "" phase=6 spanning=1
	check "$label: nothing before the start, nothing while stopped" "$(cut -f1 "$TSV" | tr '\n' ' ')" \
		[ "$(field before "" 2)$(field after "" 2)$(field main "" 2)" = "" ]
	s=$(ctl_ns spanning)
	check "$label: 300 ms stopped is not spanning's (total ${s} ns < 100 ms)" "spanning $s ns" \
		ctl_below "$s" 100000000
done

# ---- C++ ------------------------------------------------------------------
for v in "linked control_cxx_linked" "preload control_cxx"; do
	read -r mode bin <<<"$v"
	run "$mode" "cxx-$mode" "$bin"
	check_run "control C++ $mode" "$mode" 0 done
	report "control C++ $mode" "$TRACE" || continue
	expect_calls "control C++ $mode" region "[add]=4" "[fail]=1"
	expect_calls "control C++ $mode" "" "shop::Basket::add(int)=4" "shop::Basket::fail()=1"
	"$HP" dump "$TRACE" >"$DIR/dump" 2>&1
	check "control C++ $mode: the mark and the values in dump" "$(brief "$DIR/dump")" \
		all_of grep -q ' mark caught it$' "$DIR/dump" -- \
		[ "$(grep ' value items ' "$DIR/dump" | awk '{ print $5 }' | tr '\n' ' ')" = "1 3 6 10 " ]
done

# ---- the API without the library --------------------------------------------
for bin in control_nolib control_nolib_cxx; do
	RUNS=$((RUNS + 1))
	DIR=$T/run/$RUNS-$bin
	mkdir -p "$DIR"
	(cd "$DIR" && exec "$B/$bin" >out 2>err)
	RC=$?
	check "$bin (no -finstrument-functions, no libhookprof): runs unchanged" "status $RC, out '$(brief "$DIR/out")', err '$(brief "$DIR/err")'" \
		all_of [ $RC = 0 ] -- [ "$(cat "$DIR/out")" = done ] -- [ ! -s "$DIR/err" ]
	check "$bin: no trace written" "$(ls "$DIR")" [ -z "$(ls "$DIR" | grep -v '^out$\|^err$')" ]
done
check "control_nolib: libhookprof is not a dependency" "$(ldd "$B/control_nolib" 2>&1 | grep hookprof)" \
	[ -z "$(ldd "$B/control_nolib" 2>&1 | grep hookprof)" ]
