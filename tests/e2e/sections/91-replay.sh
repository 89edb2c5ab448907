# tests/e2e/sections/91-replay.sh - hookprof replay and dump, threads merged
# by time: per function as many "name();" and "name() {" lines as report
# counts calls, braces nested per thread, timestamps that never go back
# across the whole output; dump's times never back, never negative; both
# on a trace killed with SIGKILL (--partial). (Sourced by tests/e2e/run.sh.)

RP=$T/replay
mkdir -p "$RP"
RP_N=0

# replay_lines FILE: "calls NAME N" per function, then "bad WHY" lines for
# each break of the rules: a closing line that closes another function than
# its thread's newest open one, frames left open, a timestamp before the
# line above's, a line of no known shape.
replay_lines() {
	awk '
	/^#/ { next }
	{
		split($0, part, " [|] ")
		n = split(part[1], col, " +")
		ts = col[1] == "" ? col[2] : col[1]
		tid = col[n]
		body = part[2]
		sub(/^ +/, "", body)
		sub(/^\(depth [0-9]+\) /, "", body)
		if (NR > 1 && ts + 0 < last + 0) { print "bad time at line " NR ": " ts " after " last; bad++ }
		last = ts
		if (body ~ /^} \/\* /) {
			name = body; sub(/^} \/\* /, "", name); sub(/ \*\/$/, "", name)
			d = depth[tid]
			if (!d || open[tid, d] != name) print "bad close at line " NR ": " name " (open: " open[tid, d] ")"
			depth[tid] = d - 1
		} else if (body ~ /\(\) \{$/) {
			name = body; sub(/\(\) \{$/, "", name)
			calls[name]++
			open[tid, ++depth[tid]] = name
		} else if (body ~ /\(\);$/) {
			name = body; sub(/\(\);$/, "", name)
			calls[name]++
		} else print "bad line " NR ": " $0
	}
	END {
		for (t in depth) if (depth[t]) print "bad: thread " t " ends with " depth[t] " frames open"
		for (f in calls) print "calls " f " " calls[f]
	}' "$1"
}

# replay_checks LABEL TRACE [--partial]: replay exits 0 with nothing on
# stderr, its lines follow the rules, and every function of report has as
# many lines as calls (and no other function has any).
replay_checks() {
	local label=$1 trace=$2 partial=${3:-} out=$RP/$RUNS-$((++RP_N)).replay
	"$HP" replay $partial "$trace" >"$out" 2>"$out.err"
	local rc=$?
	check "$label: replay exits 0, nothing on stderr" "status $rc, $(brief "$out.err")" [ $rc = 0 -a ! -s "$out.err" ]
	replay_lines "$out" >"$out.check"
	check "$label: replay nests per thread, time never goes back" "$(grep -m 3 '^bad' "$out.check" | tr '\n' '|')" \
		[ -z "$(grep '^bad' "$out.check")" ]
	"$HP" report $partial --format=csv "$trace" 2>/dev/null | csv_to_tsv /dev/stdin >"$out.tsv"
	local diff
	diff=$(awk -F'\t' 'NR == FNR { if ($1 != "") want[$1] += $2; next }
		$1 == "calls" { got[$2] = $3 }
		END {
			for (f in want) if (got[f] + 0 != want[f]) print f ": " got[f] + 0 " lines, " want[f] " calls"
			for (f in got) if (!(f in want)) print f ": " got[f] " lines, not in report"
		}' "$out.tsv" FS=' ' "$out.check")
	check "$label: replay has one line per call of each function, as report counts ($(wc -l <"$out.tsv") functions)" \
		"$diff" [ -z "$diff" -a -s "$out.tsv" ]
}

# dump_checks LABEL TRACE [--partial]: dump's times never go back and are
# never negative; its enters per function are report's calls.
dump_checks() {
	local label=$1 trace=$2 partial=${3:-} out=$RP/$RUNS-$((++RP_N)).dump
	"$HP" dump $partial "$trace" >"$out" 2>"$out.err"
	local rc=$?
	check "$label: dump exits 0" "status $rc, $(brief "$out.err")" [ $rc = 0 ]
	local bad
	bad=$(awk '/^#/ || $2 == "-" { next }
		$2 < 0 { print "negative at line " NR ": " $0; exit }
		n && $2 + 0 < last + 0 { print "back at line " NR ": " $0 " after " last; exit }
		{ last = $2; n++ }' "$out")
	check "$label: dump in time order across threads, no negative time" "$bad" [ -z "$bad" ]
	"$HP" report $partial --format=csv "$trace" 2>/dev/null | csv_to_tsv /dev/stdin >"$out.tsv"
	bad=$(awk -F'\t' 'NR == FNR { if ($1 != "") want[$1] += $2; next }
		$3 == "enter" { got[$4]++ }
		END { for (f in want) if (got[f] + 0 != want[f]) print f ": " got[f] + 0 " enters, " want[f] " calls" }' \
		"$out.tsv" FS=' ' "$out")
	check "$label: dump enters each function as often as report counts" "$bad" [ -z "$bad" -a -s "$out.tsv" ]
}

run preload replay-threads threads
check_run "replay: threads" preload 0 "threads done 1"
replay_checks "replay: 8 threads" "$TRACE"
dump_checks "dump: 8 threads" "$TRACE"

if ! skipped_under thread -- "replay of the recursion" "$DEEP_STACK"; then
	run preload replay-recursion recursion
	replay_checks "replay: recursion 100000 deep and fib" "$TRACE"
fi

run preload replay-deepjump deepjump
replay_checks "replay: longjmp out of a recursion 14000 deep" "$TRACE"
dump_checks "dump: longjmp out of a recursion" "$TRACE"

run preload replay-jump jump
replay_checks "replay: longjmp" "$TRACE"

run preload replay-killspin killspin 200
replay_checks "replay: two threads calling all the time" "$TRACE"
dump_checks "dump: two threads calling all the time" "$TRACE"

# the leaf lines: nested's nest_c calls each one line, nest_b opened and closed
run preload replay-nested nested_O0
"$HP" replay "$TRACE" >"$RP/nested" 2>&1
check "replay: nested: 30 'nest_c();', 6 'nest_b() {' and 6 '} /* nest_b */' lines" "$(brief "$RP/nested")" \
	[ "$(grep -c '| *nest_c();$' "$RP/nested")" = 30 -a "$(grep -c '| *nest_b() {$' "$RP/nested")" = 6 \
	  -a "$(grep -c '| *} /\* nest_b \*/$' "$RP/nested")" = 6 ]

# ---- a trace killed with SIGKILL: --partial ------------------------------
if [ -x "$B/killspin" ]; then
	tr=$RP/killed.hookprof
	(cd "$RP" && HOOKPROF_OUTPUT=$tr LD_PRELOAD=$LIB exec "$B/killspin" 10000 "$tr.ready" >/dev/null 2>&1) &
	pid=$!
	wait_ready "$tr.ready" $pid
	sleep 0.3
	kill -KILL $pid 2>/dev/null
	wait $pid 2>/dev/null
	"$HP" replay "$tr" >/dev/null 2>"$RP/killed.err"
	check "replay of a SIGKILLed trace without --partial: refused with one line" "$(brief "$RP/killed.err")" \
		[ "$(wc -l <"$RP/killed.err")" = 1 ]
	replay_checks "replay --partial, SIGKILLed" "$tr" --partial
	dump_checks "dump --partial, SIGKILLed" "$tr" --partial
else
	nok "replay --partial, SIGKILLed" "killspin was not built"
fi
