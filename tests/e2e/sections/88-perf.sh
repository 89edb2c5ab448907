# tests/e2e/sections/88-perf.sh - memory with many threads (issue 8): in
# stream mode the threads' buffers share a budget, so 32 busy threads alive
# at once grow the peak resident set by at most 32 MiB, and so do 512
# (past 32 live rings a new ring's chunks are smaller); ring mode keeps
# every thread's buffer whole. Peak RSS is a size, not a timing: the bounds
# hold by construction (an 8 MiB budget + 32 x 128 KiB; the budget + 10 MiB
# for the first 256 rings + 256 x 16 KiB; 32 x 1 MiB). (Sourced by
# tests/e2e/run.sh.)

build rssthreads gcc "${IF[@]}" -O1 -pthread "$SRC/rssthreads.c"

# rss_growth PLAIN_KB TRACED_KB: TRACED - PLAIN, or fails if either is not a number.
rss_growth() {
	case "$1$2" in '' | *[!0-9]*) return 1 ;; esac
	[ -n "$1" ] && [ -n "$2" ] && echo $(($2 - $1))
}
growth_at_most() { local g; g=$(rss_growth "$1" "$2") && [ "$g" -le "$3" ]; }
growth_at_least() { local g; g=$(rss_growth "$1" "$2") && [ "$g" -ge "$3" ]; }

RSS_NOTE="the sanitizer's shadow memory grows with every buffer touched"
if ! skipped_under address thread -- "peak RSS of 32 busy threads" "$RSS_NOTE"; then
	# rss_stream N CALLS: N busy threads of CALLS calls each, without
	# hookprof and in stream mode: the growth within 32 MiB, every call
	# counted, none lost. PLAIN_KB: the run without hookprof.
	rss_stream() {
		local n=$1 calls=$2 label="$1 busy threads, stream mode (default buffer)" traced_kb
		run_guarded linked "rss-plain-$n" rssthreads -- "$n" "$calls"
		PLAIN_KB=$(cat "$DIR/out")
		check "$n busy threads without hookprof: exit status 0, peak RSS printed" \
			"status $RC, out '$(brief "$DIR/out")'" [ "$RC" = 0 -a -n "$PLAIN_KB" ]
		run_guarded preload "rss-stream-$n" rssthreads -- "$n" "$calls"
		traced_kb=$(cat "$DIR/out")
		check "$label: exit status 0, nothing on stderr" "status $RC, $(brief "$DIR/err")" [ "$RC" = 0 -a ! -s "$DIR/err" ]
		check "$label: peak RSS grows by at most 32 MiB" "plain $PLAIN_KB KiB, traced $traced_kb KiB" \
			growth_at_most "$PLAIN_KB" "$traced_kb" 32768
		if report "$label" "$TRACE"; then
			expect_calls "$label" rssthreads main=1 rt_thread="$n" rt_work=$((n * calls))
			zero_lost "$label"
		fi
	}
	rss_stream 512 20000
	rss_stream 32 100000
	plain_kb=$PLAIN_KB

	# The same measure sees the memory when nothing bounds it: each
	# thread's 1 MiB ring fills (200000 events of 16 bytes), all at once.
	label="32 busy threads, ring mode, HOOKPROF_BUFFER=1M"
	run_guarded preload rss-ring rssthreads HOOKPROF_MODE=ring HOOKPROF_BUFFER=1M -- 32
	ring_kb=$(cat "$DIR/out")
	check "$label: exit status 0, nothing on stderr" "status $RC, $(brief "$DIR/err")" [ "$RC" = 0 -a ! -s "$DIR/err" ]
	check "$label: every thread keeps its whole ring: peak RSS grows by at least 28 MiB" \
		"plain $plain_kb KiB, traced $ring_kb KiB" \
		growth_at_least "$plain_kb" "$ring_kb" 28672
fi
