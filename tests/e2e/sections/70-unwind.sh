# tests/e2e/sections/70-unwind.sh - crash backtraces and root stacks taken
# with libunwind (CRASH and STACK records), as `hookprof info` and
# `hookprof report` show them. Sourced by tests/e2e/run.sh.

build unwleaf.o gcc -g -O1 -fno-stack-protector -c "$SRC/unwleaf.c"
build unwcrash gcc "${IF[@]}" -O1 -pthread "$SRC/unwcrash.c" "$B/unwleaf.o"
build unwcrash_linked gcc "${IF[@]}" -O0 -pthread "$SRC/unwcrash.c" "$B/unwleaf.o" "${LINK[@]}"

# info_of LABEL: `hookprof info $TRACE` into $DIR/info; fails if it fails.
info_of() {
	"$HP" info "$TRACE" >"$DIR/info" 2>"$DIR/info.err"
	check "$1: hookprof info works" "status $?; $(brief "$DIR/info.err")" [ -s "$DIR/info" ] && [ ! -s "$DIR/info.err" ]
}
# frames FILE: the function of each backtrace line, in order, on one line.
frames() { awk '$1 ~ /^#[0-9]+$/ { printf "%s ", $3 } $2 ~ /^#[0-9]+$/ { printf "%s ", $4 }' "$1"; }
# line_is LABEL FILE TEXT: FILE has a line that is exactly TEXT.
line_is() {
	check "$1: says '$3'" "$(grep -m3 -e "${3:0:12}" "$2" | tr '\n' '|')" grep -qxF -e "$3" "$2"
}

unw_crash_checks() { # LABEL BIN SIGNAL-LINE LEAF
	local label=$1 bin=$2 sigline=$3 leaf=$4 got
	info_of "$label" || return
	line_is "$label" "$DIR/info" "$sigline"
	line_is "$label" "$DIR/info" "thread: stream 0 tid $(awk '$1 == "stream" && $2 == 0 { print $4 }' "$DIR/info") $bin"
	got=$(frames "$DIR/info")
	# frames of libc (abort, raise...) first, then the uninstrumented leaf
	# and the instrumented callers in order
	check "$label: backtrace $leaf cr_inner cr_outer main __libc_start_call_main" "frames: $got" \
		eval '[[ "$got" == *"$leaf cr_inner cr_outer main __libc_start_call_main __libc_start_main"* ]]'
	local n
	n=$(awk '$1 ~ /^#/ && ($3 == "cr_inner" || $3 == "cr_outer" || $3 == "main") && /\[not returned\]$/ { k++ } END { print k + 0 }' "$DIR/info")
	check "$label: cr_inner, cr_outer and main marked [not returned]" "$n marked" [ "$n" = 3 ]
	n=$(awk -v f="$leaf" '$1 ~ /^#/ && $3 == f && !/not returned/ { k++ } END { print k + 0 }' "$DIR/info")
	check "$label: $leaf (no hooks) is in the backtrace, not marked" "$n" [ "$n" = 1 ]
	line_is "$label" "$DIR/info" "not returned (instrumented frames open at the crash, outermost first): main > cr_outer > cr_inner"
	report "$label" "$TRACE" || return
	expect_calls "$label" "$bin" main=1 cr_outer=1 cr_inner=1
	"$HP" report "$TRACE" >"$DIR/table" 2>&1
	line_is "$label: report" "$DIR/table" "# $sigline"
	got=$(frames "$DIR/table")
	check "$label: report shows the backtrace" "frames: $got" \
		eval '[[ "$got" == *"$leaf cr_inner cr_outer main"* ]]'
	line_is "$label: report" "$DIR/table" "# not returned (instrumented frames open at the crash, outermost first): main > cr_outer > cr_inner"
}

run preload unw-segv unwcrash segv
check_run "unwind: SIGSEGV in code without hooks, preload" preload 139 "unwcrash segv"
unw_crash_checks "unwind: SIGSEGV in code without hooks, preload" unwcrash \
	"crash: SIGSEGV (signal 11, code 1, address 0x0)" leaf_segv
run linked unw-segv-linked unwcrash_linked segv
check_run "unwind: SIGSEGV in code without hooks, linked" linked 139 "unwcrash segv"
unw_crash_checks "unwind: SIGSEGV in code without hooks, linked" unwcrash_linked \
	"crash: SIGSEGV (signal 11, code 1, address 0x0)" leaf_segv

run preload unw-abort unwcrash abort
check_run "unwind: abort() in code without hooks, preload" preload 134 "unwcrash abort"
unw_crash_checks "unwind: abort() in code without hooks, preload" unwcrash \
	"crash: SIGABRT (signal 6, code -6)" leaf_abort
got=$(frames "$DIR/info")
TSAN_FRAMES="TSan's interceptors (__interceptor_abort, __tsan_thread_start_func) are frames of their own in the stack"
if ! skipped_under thread -- "unwind: abort(): libc frames above leaf_abort" "$TSAN_FRAMES"; then
	check "unwind: abort(): libc frames above leaf_abort (raise, abort)" "frames: $got" \
		eval '[[ "$got" == *"raise abort leaf_abort cr_inner"* ]]'
fi
n=$(awk '$1 ~ /^#/ && $4 == "(libc.so.6)" { k++ } END { print k + 0 }' "$DIR/info")
check "unwind: abort(): frames in libc.so.6 are named" "$n frames in libc" [ "$n" -ge 4 ]

run record unw-abort-record unwcrash abort
check_run "unwind: abort(), record" record 134 "unwcrash abort"
unw_crash_checks "unwind: abort(), record" unwcrash "crash: SIGABRT (signal 6, code -6)" leaf_abort

# In ring mode too (no writer thread: the flush at the signal writes all).
run_env unw-segv-ring unwcrash HOOKPROF_MODE=ring -- segv
check_run "unwind: SIGSEGV, HOOKPROF_MODE=ring" preload 139 "unwcrash segv"
unw_crash_checks "unwind: SIGSEGV, HOOKPROF_MODE=ring" unwcrash \
	"crash: SIGSEGV (signal 11, code 1, address 0x0)" leaf_segv

# A crash in a thread: its stream, and a backtrace down to start_thread.
run preload unw-tsegv unwcrash tsegv
check_run "unwind: SIGSEGV in a thread" preload 139 "unwcrash tsegv"
if info_of "unwind: SIGSEGV in a thread"; then
	line_is "unwind: SIGSEGV in a thread" "$DIR/info" "crash: SIGSEGV (signal 11, code 1, address 0x0)"
	line_is "unwind: SIGSEGV in a thread" "$DIR/info" "thread: stream 1 tid $(awk '$1 == "stream" && $2 == 1 { print $4 }' "$DIR/info") unwcrash"
	got=$(frames "$DIR/info")
	skipped_under thread -- "unwind: SIGSEGV in a thread: backtrace down to start_thread" "$TSAN_FRAMES" ||
		check "unwind: SIGSEGV in a thread: backtrace leaf_segv ... cr_crasher start_thread" "frames: $got" \
			eval '[[ "$got" == "leaf_segv cr_inner cr_outer cr_crasher start_thread "*clone3* ]]'
	line_is "unwind: SIGSEGV in a thread" "$DIR/info" "not returned (instrumented frames open at the crash, outermost first): cr_crasher > cr_outer > cr_inner"
fi

# A smashed stack: the unwinder stops at the garbage return address; the
# handler survives it and the trace is complete.
run preload unw-smash unwcrash smash
check_run "unwind: smashed stack" preload 139 "unwcrash smash"
if info_of "unwind: smashed stack"; then
	line_is "unwind: smashed stack" "$DIR/info" "complete: yes"
	got=$(frames "$DIR/info")
	check "unwind: smashed stack: frame 0 is leaf_smash" "frames: $got" eval '[[ "$got" == "leaf_smash "* ]]'
	line_is "unwind: smashed stack" "$DIR/info" "not returned (instrumented frames open at the crash, outermost first): main > cr_outer > cr_inner"
fi

# A stack overflow: the handler runs on hookprof's alternate stack and
# unwinds the overflowed one, keeping its first 256 frames.
if ! skipped_under thread -- "unwind: stack overflow" "TSan's own stack depot fails a CHECK on the 65536-frame stack"; then
	run preload unw-overflow unwcrash overflow
	check_run "unwind: stack overflow, preload" preload 139 "unwcrash overflow"
	if info_of "unwind: stack overflow"; then
		line_is "unwind: stack overflow" "$DIR/info" "backtrace: 256 frames, unwound in $(sed -n 's/^backtrace: 256 frames, unwound in //p' "$DIR/info")"
		line_is "unwind: stack overflow" "$DIR/info" "  ... truncated: the first 256 frames only"
		n=$(awk '$1 ~ /^#/ && $3 == "cr_recurse" && /\[not returned\]$/ { k++ } END { print k + 0 }' "$DIR/info")
		check "unwind: stack overflow: at least 250 of the 256 frames are cr_recurse, not returned" "$n" [ "$n" -ge 250 ]
		line_is "unwind: stack overflow" "$DIR/info" "thread: stream 0 tid $(awk '$1 == "stream" && $2 == 0 { print $4 }' "$DIR/info") unwcrash"
	fi
fi

# Root stacks: who called the first instrumented frame of each thread.
run preload unw-thread unwcrash thread
check_run "unwind: root stacks, preload" preload 0 "unwcrash thread"
if info_of "unwind: root stacks"; then
	roots=$(grep '^    root:' "$DIR/info" | tr '\n' '|')
	check "unwind: main's root stack is main <- __libc_start_call_main <- __libc_start_main <- _start" "$roots" \
		eval '[[ "$roots" == "    root: main (unwcrash) <- __libc_start_call_main (libc.so.6) <- __libc_start_main"*" (libc.so.6) <- _start (unwcrash)|"* ]]'
	skipped_under thread -- "unwind: the thread's root stack is cr_thread <- start_thread" "$TSAN_FRAMES" ||
		check "unwind: the thread's root stack is cr_thread <- start_thread <- clone3" "$roots" \
		eval '[[ "$roots" == *"|    root: cr_thread (unwcrash) <- start_thread (libc.so.6) <- "*clone3*" (libc.so.6)|" ]]'
	n=$(grep -c '^crash:' "$DIR/info")
	check "unwind: no crash in a run that exits" "$n crash lines" [ "$n" = 0 ]
	report "unwind: root stacks" "$TRACE" && expect_calls "unwind: root stacks" unwcrash main=1 cr_thread=1 cr_work=3
fi

# libhookprof.a needs libunwind: hookprof.pc's Libs.private names it, so
# the README's pkg-config line with --static links a fully static program
# whose crash still gets its backtrace. ($P: the install of the main checks.)
if [ -f "${P:-}/lib/pkgconfig/hookprof.pc" ]; then
	if flags=$(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --static --cflags --libs hookprof 2>"$T/pc.err") &&
		# shellcheck disable=SC2086 # the flags are words
		build unwcrash_static gcc "${IF[@]}" -O1 -static "$SRC/unwcrash.c" "$B/unwleaf.o" $flags; then
		run linked unw-static unwcrash_static segv
		check_run "unwind: -static with pkg-config --static" linked 139 "unwcrash segv"
		unw_crash_checks "unwind: -static with pkg-config --static" unwcrash_static \
			"crash: SIGSEGV (signal 11, code 1, address 0x0)" leaf_segv
	else
		nok "unwind: pkg-config --static --libs hookprof links a -static program" "$(cat "$T/pc.err" 2>/dev/null)"
	fi
fi
