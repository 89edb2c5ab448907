# tests/e2e/sections/40-signals.sh - process-level behaviour: a fatal signal
# during hookprof_flush() or while other threads run on, exec and its
# family, children that share the parent's memory (vfork, clone(CLONE_VM)).
# Sourced by tests/e2e/run.sh after its own checks.

build flushloop_linked gcc "${IF[@]}" -O0 "$SRC/flushloop.c" "${LINK[@]}"

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
