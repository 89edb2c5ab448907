# 20-reader.sh - the trace reader on traces the runtime wrote (sourced by
# tests/e2e/run.sh): a longjmp out of a deep recursion in mid-record, traces
# of programs killed with SIGKILL at random moments, and a trace cut at many
# points near its end, read with --partial.

# ---- a longjmp out of 14000 frames, then more calls ----------------------

build deepjump gcc "${IF[@]}" -O1 "$SRC/deepjump.c"
build deepjump_linked gcc "${IF[@]}" -O0 "$SRC/deepjump.c" "${LINK[@]}"
deepjump_checks() { # LABEL BIN
	local label=$1 bin=$2
	report "$label" "$TRACE" || return
	expect_calls "$label" "$bin" main=1 dj_run=8 dj_down=112000 dj_after=40000
	check_times "$label"
}
run preload deepjump deepjump
check_run "deepjump preload" preload 0 "deepjump 8"
deepjump_checks "deepjump preload" deepjump
run linked deepjump-linked deepjump_linked
check_run "deepjump linked" linked 0 "deepjump 8"
deepjump_checks "deepjump linked" deepjump_linked

# ---- killed with SIGKILL at random moments --------------------------------

build killspin gcc "${IF[@]}" -O1 -pthread "$SRC/killspin.c"

# partial_ok FILE.err: stderr of a --partial read holds nothing, or only the
# one line that says where the trace was cut.
partial_stderr_ok() {
	[ ! -s "$1" ] || { [ "$(wc -l <"$1")" = 1 ] && grep -q '^hookprof: warning: .*: trace cut at byte [0-9]* ' "$1"; }
}

# 20 runs killed 100 to 600 ms after killspin said it made its first rounds
# (so its first chunks and CLOCK records are written, however slow the start
# under a sanitizer), half with the monotonic clock; spin would end by itself
# after 10 s. Each trace: report --partial exits 0 with a sane CSV.
KILLED=$T/killed
mkdir -p "$KILLED"
kill_bad=""
kill_cut=0
for i in $(seq 1 20); do
	[ -x "$B/killspin" ] || { kill_bad="killspin was not built"; break; }
	tr=$KILLED/$i.hookprof
	clock=tsc
	[ $((i % 2)) = 0 ] && clock=monotonic
	(cd "$KILLED" && HOOKPROF_OUTPUT=$tr HOOKPROF_CLOCK=$clock LD_PRELOAD=$LIB exec "$B/killspin" 10000 "$tr.ready" >/dev/null 2>&1) &
	pid=$!
	wait_ready "$tr.ready" $pid || kill_bad="$kill_bad run $i: killspin never said it was under way;"
	sleep "$(printf '0.%03d' $((100 + RANDOM % 500)))"
	kill -KILL $pid 2>/dev/null
	wait $pid 2>/dev/null
	"$HP" report --partial --format=csv "$tr" >"$KILLED/$i.csv" 2>"$KILLED/$i.err"
	rc=$?
	if [ $rc != 0 ] || ! csv_to_tsv "$KILLED/$i.csv" >"$KILLED/$i.tsv" || ! partial_stderr_ok "$KILLED/$i.err" ||
		! grep -q "^sp_leaf	" "$KILLED/$i.tsv"; then
		kill_bad="$kill_bad run $i ($clock): status $rc, $(brief "$KILLED/$i.err") $(brief "$KILLED/$i.tsv");"
	fi
	[ -s "$KILLED/$i.err" ] && kill_cut=$((kill_cut + 1))
	rm -f "$tr"
done
check "kill -9 at 20 random moments: report --partial reads every trace (exit 0, a CSV with sp_leaf; $kill_cut cut in a record)" \
	"$kill_bad" [ -z "$kill_bad" ]

# ---- one trace cut at many points near its end -----------------------------

run preload killspin-short killspin 150
check_run "killspin 150 ms preload" preload 0 "spin done"
CUT=$T/cut
mkdir -p "$CUT"
if [ -s "$TRACE" ]; then
	size=$(wc -c <"$TRACE")
	report "killspin 150 ms" "$TRACE"
	full_calls=$(field sp_leaf killspin 2)
	cut_bad=""
	cuts=0
	said_cut=0
	# Every 13 bytes over the last 1500 (the last records: EVENTS, THREAD,
	# CLOCK, LOST, END), then a few in the middle.
	for len in $(seq $((size - 1)) -13 $((size - 1500))) $((size / 2)) $((size / 3)); do
		head -c "$len" "$TRACE" >"$CUT/t.hookprof"
		cuts=$((cuts + 1))
		"$HP" report --partial --format=csv "$CUT/t.hookprof" >"$CUT/out.csv" 2>"$CUT/err"
		rc=$?
		if [ $rc != 0 ] || ! csv_to_tsv "$CUT/out.csv" >"$CUT/out.tsv" || ! partial_stderr_ok "$CUT/err"; then
			cut_bad="$cut_bad at $len: status $rc, $(brief "$CUT/err");"
			continue
		fi
		grep -q "trace cut at byte" "$CUT/err" && said_cut=$((said_cut + 1))
		calls=$(awk -F'\t' '$1 == "sp_leaf" { print $2 }' "$CUT/out.tsv")
		[ -n "$calls" ] && [ "$calls" -le "${full_calls:-0}" ] ||
			cut_bad="$cut_bad at $len: sp_leaf $calls calls, the whole trace $full_calls;"
	done
	check "a trace cut at $cuts points: report --partial reads each, no more calls than the whole ($said_cut said where)" \
		"$cut_bad" [ -z "$cut_bad" -a "$said_cut" -gt 0 ]
	head -c $((size - 3)) "$TRACE" >"$CUT/t.hookprof"
	"$HP" report --format=csv "$CUT/t.hookprof" >"$CUT/out.csv" 2>"$CUT/err"
	rc=$?
	check "a cut trace without --partial: refused in one line, nothing on stdout" \
		"status $rc, $(brief "$CUT/err")" \
		[ $rc = 1 -a ! -s "$CUT/out.csv" -a "$(wc -l <"$CUT/err")" = 1 ]
	check "a cut trace without --partial: the line says --partial reads what comes before the cut" \
		"$(brief "$CUT/err")" grep -q -- "runs past the end); --partial reads what comes before it" "$CUT/err"
	"$HP" info "$CUT/t.hookprof" >"$CUT/info" 2>"$CUT/err"
	rc=$?
	check "info on a cut trace says where it was cut" "status $rc, $(brief "$CUT/info") $(brief "$CUT/err")" \
		grep -q "^complete: no (cut at byte [0-9]*: " "$CUT/info"
	"$HP" dump --partial "$CUT/t.hookprof" >"$CUT/dump" 2>"$CUT/err"
	rc=$?
	check "dump --partial on a cut trace: exit 0, the events, one line saying where it was cut" \
		"status $rc, $(brief "$CUT/err")" \
		[ $rc = 0 -a "$(grep -c ' enter sp_leaf$' "$CUT/dump")" -gt 0 -a "$(wc -l <"$CUT/err")" = 1 ]
fi
