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
	run_guarded linked rss-plain rssthreads -- 32
	plain_kb=$(cat "$DIR/out")
	check "32 busy threads without hookprof: exit status 0, peak RSS printed" "status $RC, out '$(brief "$DIR/out")'" \
		[ "$RC" = 0 -a -n "$plain_kb" ]

	label="32 busy threads, stream mode (default buffer)"
	run_guarded preload rss-stream rssthreads -- 32
	stream_kb=$(cat "$DIR/out")
	check "$label: exit status 0, nothing on stderr" "status $RC, $(brief "$DIR/err")" [ "$RC" = 0 -a ! -s "$DIR/err" ]
	check "$label: peak RSS grows by at most 32 MiB" "plain $plain_kb KiB, traced $stream_kb KiB" \
		growth_at_most "$plain_kb" "$stream_kb" 32768
	if report "$label" "$TRACE"; then
		expect_calls "$label" rssthreads main=1 rt_thread=32 rt_work=3200000
		zero_lost "$label"
	fi

	label="512 busy threads, stream mode (default buffer)"
	run_guarded linked rss-plain-512 rssthreads -- 512 20000
	plain512_kb=$(cat "$DIR/out")
	run_guarded preload rss-stream-512 rssthreads -- 512 20000
	stream512_kb=$(cat "$DIR/out")
	check "$label: exit status 0, nothing on stderr" "status $RC, $(brief "$DIR/err")" [ "$RC" = 0 -a ! -s "$DIR/err" ]
	check "$label: peak RSS grows by at most 32 MiB" "plain $plain512_kb KiB, traced $stream512_kb KiB" \
		growth_at_most "$plain512_kb" "$stream512_kb" 32768
	if report "$label" "$TRACE"; then
		expect_calls "$label" rssthreads main=1 rt_thread=512 rt_work=10240000
		zero_lost "$label"
	fi

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
