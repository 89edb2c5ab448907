# tests/e2e/sections/40-signals.sh - process-level behaviour: a fatal signal
# during hookprof_flush() or while other threads run on, exec and its
# family, children that share the parent's memory (vfork, clone(CLONE_VM)).
# Sourced by tests/e2e/run.sh after its own checks.

build flushloop_linked gcc "${IF[@]}" -O0 "$SRC/flushloop.c" "${LINK[@]}"
build termthreads gcc "${IF[@]}" -O1 -pthread "$SRC/termthreads.c"
build vforkexec gcc "${IF[@]}" -O1 "$SRC/vforkexec.c"
build vforkexec_linked gcc "${IF[@]}" -O1 "$SRC/vforkexec.c" "${LINK[@]}"
build execer gcc "${IF[@]}" -O1 "$SRC/execer.c"
build execer_b gcc "${IF[@]}" -O1 "$SRC/execer.c"

# complete_trace FILE: hookprof says the trace ends with its END record.
complete_trace() { "$HP" info "$1" 2>/dev/null | grep -q '^complete: *yes'; }

# ---- SIGTERM inside hookprof_flush() ------------------------------------
# A timer sends SIGTERM while the program flushes in a loop: the signal
# must wait until the flush lets go of the writer's lock, so the final
# flush writes the end at once, and never gives up (it would say so).
fl_runs=20 fl_status="" fl_incomplete="" fl_stderr="" fl_slowest=0
for i in $(seq 1 $fl_runs); do
	delay_us=$((4000 + i * 1500))
	run_guarded linked "flushloop-$i" flushloop_linked -- $delay_us
	[ "$RC" = 143 ] || fl_status="$fl_status run $i: $RC;"
	complete_trace "$TRACE" || fl_incomplete="$fl_incomplete $i"
	[ -s "$DIR/err" ] && fl_stderr="$fl_stderr run $i: $(brief "$DIR/err");"
	late_ms=$(((WALL_NS / 1000 - delay_us) / 1000))
	[ $late_ms -gt $fl_slowest ] && fl_slowest=$late_ms
done
label="SIGTERM during a loop of hookprof_flush(), $fl_runs runs"
check "$label: each dies of SIGTERM (143)" "$fl_status" [ -z "$fl_status" ]
check "$label: each trace is complete (END written)" "incomplete in runs:$fl_incomplete" [ -z "$fl_incomplete" ]
check "$label: nothing on stderr (the final flush never gave up)" "$fl_stderr" [ -z "$fl_stderr" ]
echo "# $label: slowest death ${fl_slowest} ms after the signal (not a pass/fail figure)"

# ---- SIGTERM while other threads call on ------------------------------
# Four threads call tt_work in a loop and count the calls they completed in
# a shared file; main raises SIGTERM. The trace's events plus its lost
# count must account for every event the threads made: 1 (main) + 4
# (tt_thread) + 2 per completed call, give or take the call each thread is
# in when it stops (its exit written but not yet counted: +2; its newest
# slot taken but not yet filled at the snapshot: -1).
# trace_totals FILE: "EVENTS LOST" from hookprof info.
trace_totals() {
	"$HP" info "$1" 2>/dev/null | awk '
		/^events:/ { ev = $2 }
		/^lost:/ { lost += $2 }
		/^  stream / { for (i = 1; i < NF; i++) if ($(i + 1) == "lost") lost += $i }
		END { print ev + 0, lost + 0 }'
}
for run in stream-1 stream-2 ring monotonic; do
	mode=${run%-*} clock=tsc
	[ $run = monotonic ] && mode=stream clock=monotonic
	label="SIGTERM while 4 threads call on, $mode mode, $clock clock ($run)"
	run_guarded preload "termthreads-$run" termthreads HOOKPROF_MODE=$mode HOOKPROF_CLOCK=$clock \
		HOOKPROF_BUFFER=1M -- counts 100000
	check "$label: dies of SIGTERM (143)" "got $RC; stderr: $(brief "$DIR/err")" [ "$RC" = 143 ]
	check "$label: trace complete" "$("$HP" info "$TRACE" 2>&1 | head -c 300)" complete_trace "$TRACE"
	made=$(od -An -tu8 -w8 -v "$DIR/counts" 2>/dev/null | awk '{ s += $1 } END { print 2 * s + 5 }')
	read -r events lost <<<"$(trace_totals "$TRACE")"
	check "$label: events + lost = the 2*calls+5 events made, within -4..+8" \
		"events $events + lost $lost vs made $made: off by $((events + lost - made))" \
		awk -v d=$((events + lost - made)) 'BEGIN { exit !(d >= -4 && d <= 8) }'
done

# ---- children that share the parent's memory ---------------------------
# vfork() and clone(CLONE_VM|CLONE_VFORK): the child calls ve_child 5000
# times (more than a chunk) on the parent's memory, then execs /bin/true.
# The parent's trace is its own, exact; its tracing goes on.
for how in vfork clone; do
	for mode in preload linked; do
		bin=vforkexec
		[ $mode = linked ] && bin=vforkexec_linked
		label="$how child calling 5000 functions then exec /bin/true, $mode"
		run_guarded $mode "vforkexec-$how-$mode" $bin -- $how
		check_run "$label" $mode 0 "$how child exit 0"
		if report "$label: the parent's trace" "$TRACE"; then
			expect_calls "$label: the parent's trace" $bin main=1 ve_parent=200
			check "$label: the parent's trace holds none of the child's calls" \
				"ve_child calls: $(field ve_child "" 2)" [ -z "$(field ve_child "" 2)" ]
		fi
	done
done
# hookprof_flush() in such a child writes nothing (it is the parent's trace).
VFORK_IS_FORK="TSan's vfork interceptor calls fork: the child has memory of its own, and is traced as a forked child"
for how in vfork clone; do
	label="$how child calling hookprof_flush() before exec"
	[ $how = vfork ] && skipped_under thread -- "$label" "$VFORK_IS_FORK" && continue
	run_guarded linked "vforkexec-$how-flush" vforkexec_linked -- $how /bin/true flush
	check_run "$label" linked 0 "$how child exit 0
hookprof_flush in the child: -1"
	if report "$label: the parent's trace" "$TRACE"; then
		expect_calls "$label: the parent's trace" vforkexec_linked main=1 ve_parent=200
	fi
done
# The image the vfork child execs is traced on its own (the preload reaches it).
label="vfork child execs an instrumented program"
if ! skipped_under thread -- "$label" "$VFORK_IS_FORK"; then
RUNS=$((RUNS + 1))
DIR=$T/run/$RUNS-vforkexec-traced
mkdir -p "$DIR"
{ (cd "$DIR" && exec timeout 10 env LD_PRELOAD="$LIB" "$B/vforkexec" vfork "$B/execer" >out 2>err); } 2>/dev/null
RC=$?
check "$label: exit status 0, the child's 2" "rc $RC; out: $(brief "$DIR/out"); err: $(brief "$DIR/err")" \
	[ "$RC" = 0 ] && [ "$(cat "$DIR/out")" = "vfork child exit 2" ]
parent_trace=$(ls "$DIR"/vforkexec-*.hookprof 2>/dev/null)
child_trace=$(ls "$DIR"/execer-*.hookprof 2>/dev/null)
check "$label: two traces, vforkexec-PID and execer-CHILDPID" "files: $(ls "$DIR" | tr '\n' ' ')" \
	[ -n "$parent_trace" ] && [ -n "$child_trace" ] && [ "$(ls "$DIR"/*.hookprof* | wc -l)" = 2 ]
if [ -n "$parent_trace" ] && report "$label: the parent's trace" "$parent_trace"; then
	expect_calls "$label: the parent's trace" vforkexec main=1 ve_parent=200
fi
if [ -n "$child_trace" ] && report "$label: the new image's trace" "$child_trace"; then
	expect_calls "$label: the new image's trace" execer main=1
fi
fi

# ---- exec and its family ------------------------------------------------
# run_named NAME BIN ARGS...: like run_guarded preload, but the traces take
# their default names (PROGRAM-PID.hookprof) in $DIR; PATH finds $B first.
run_named() {
	local name=$1 bin=$2
	shift 2
	RUNS=$((RUNS + 1))
	DIR=$T/run/$RUNS-$name
	mkdir -p "$DIR"
	{ (cd "$DIR" && exec timeout 10 env LD_PRELOAD="$LIB" PATH="$B:$PATH" "$B/$bin" "$@" >out 2>err); } 2>/dev/null
	RC=$?
}
# exec_checks LABEL FILE BIN CALLS: FILE is a complete trace of BIN with
# main=1 and ex_work=CALLS.
exec_checks() {
	local label=$1 file=$2 bin=$3 calls=$4
	check "$label: $(basename "$file") exists and is complete" "files: $(ls "$DIR" | tr '\n' ' ')" \
		complete_trace "$file"
	if report "$label: $(basename "$file")" "$file"; then
		expect_calls "$label: $(basename "$file")" "$bin" main=1 ex_work="$calls"
	fi
}
for how in execve execv execvp execvpe execl execlp execle fexecve; do
	label="execer calls $how(execer_b)"
	run_named "exec-$how" execer $how "$B/execer_b"
	check "$label: exit status 0, output 'again', nothing on stderr" \
		"rc $RC; out: $(brief "$DIR/out"); err: $(brief "$DIR/err")" \
		[ "$RC" = 0 ] && [ "$(cat "$DIR/out")" = again ] && [ ! -s "$DIR/err" ]
	pid_trace=$(ls "$DIR"/execer-*.hookprof 2>/dev/null | head -n 1)
	exec_checks "$label" "${pid_trace:-$DIR/execer-missing}" execer 300
	exec_checks "$label" "${pid_trace/execer-/execer_b-}" execer_b 50
done
# The same program again, same pid: the second trace takes the next number.
label="execer execs itself (same name, same pid)"
run_named exec-self execer execv "$B/execer"
check "$label: exit status 0, output 'again'" "rc $RC; out: $(brief "$DIR/out"); err: $(brief "$DIR/err")" \
	[ "$RC" = 0 ] && [ "$(cat "$DIR/out")" = again ]
first=$(ls "$DIR"/execer-*.hookprof 2>/dev/null | head -n 1)
exec_checks "$label, first image" "${first:-$DIR/execer-missing}" execer 300
exec_checks "$label, second image" "${first:-$DIR/execer-missing}.1" execer 50
# An exec that fails: the program goes on; its trace ended before the
# exec, and stays ended (what runs after is not recorded).
label="execer's execv of a missing program fails"
run_named exec-fails execer execv "$DIR/no-such-program"
check "$label: the program goes on (exit status 4, 'exec failed')" \
	"rc $RC; out: $(brief "$DIR/out"); err: $(brief "$DIR/err")" \
	[ "$RC" = 4 ] && [ "$(cat "$DIR/out")" = "exec failed" ] && [ ! -s "$DIR/err" ]
only=$(ls "$DIR"/*.hookprof* 2>/dev/null)
check "$label: one trace file" "files: $(ls "$DIR" | tr '\n' ' ')" [ "$(echo "$only" | wc -w)" = 1 ]
exec_checks "$label" "${only:-$DIR/execer-missing}" execer 300
