# tests/e2e/sections/30-output.sh - the trace file and the runtime's
# settings (sourced by tests/e2e/run.sh): who may make a trace file and
# with which mode, what a full disk leaves, devices and FIFOs as outputs,
# descriptor limits, warnings, programs that close every descriptor or
# die at once.

build bigtrace gcc "${IF[@]}" -O1 "$SRC/bigtrace.c"
build fdlimit gcc "${IF[@]}" -O1 "$SRC/fdlimit.c"
build spin gcc "${IF[@]}" -O1 "$SRC/spin.c"
build closeall gcc "${IF[@]}" -O0 "$SRC/closeall.c"
build closeall_linked gcc "${IF[@]}" -O0 "$SRC/closeall.c" "${LINK[@]}"
build stderrreuse_linked gcc "${IF[@]}" -O0 "$SRC/stderrreuse.c" "${LINK[@]}"
build tracewalk gcc -O1 "$SRC/tracewalk.c"

# walk FILE: WALK is the file's records walked by their sizes alone:
# "header OK records N clocks C end E tail T" (T: bytes after the last whole record).
walk() { WALK=$("$B/tracewalk" "$1" 2>&1); }
# walked NAME: the number after NAME in WALK.
walked() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' <<<"$WALK"; }
# one_line FILE REGEX: FILE is exactly one line, and it matches REGEX.
one_line() { [ "$(wc -l <"$1")" = 1 ] && grep -Eq -- "$2" "$1"; }

# ---- who may create a trace, and how -------------------------------------

run_guarded preload mode0600 nested_O0
check_run "trace file mode" preload 0 "$NESTED_OUT"
check "a trace file is created with mode 0600 (it holds the command line)" \
	"mode $(stat -c %a "$TRACE" 2>/dev/null)" [ "$(stat -c %a "$TRACE" 2>/dev/null)" = 600 ]

# A set-user-ID program linked with -lhookprof, run by nobody with
# HOOKPROF_OUTPUT pointing into a directory only root may write: nothing
# may appear there, nor in the working directory the caller chose.
label="set-user-ID root program run by nobody, HOOKPROF_OUTPUT in a root-only directory"
why_not=""
if [ "$(id -u)" != 0 ]; then
	why_not="not root"
elif ! command -v setpriv >/dev/null 2>&1; then
	why_not="no setpriv"
elif grep -Eq '^NoNewPrivs:[[:space:]]*1' /proc/self/status; then
	why_not="no_new_privs is set: set-user-ID bits are ignored here"
elif ! id nobody >/dev/null 2>&1; then
	why_not="no user nobody"
fi
SU=""
if [ -z "$why_not" ]; then
	SU=$(mktemp -d /tmp/hookprof-suid.XXXXXX) && chmod 755 "$SU" || why_not="mktemp failed"
fi
if [ -z "$why_not" ] && findmnt -n -o OPTIONS -T "$SU" 2>/dev/null | grep -qw nosuid; then
	why_not="$SU is on a nosuid mount"
fi
if [ -z "$why_not" ] && ! setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups test -r "$LIB"; then
	why_not="nobody cannot read $LIB"
fi
if [ -n "$why_not" ]; then
	echo "# skip: $label: $why_not"
else
	mkdir -m 700 "$SU/rootonly"
	mkdir -m 1777 "$SU/cwd"
	cp "$B/nested_O0_linked" "$SU/nested_suid" && chown root "$SU/nested_suid" && chmod 4755 "$SU/nested_suid"
	{ (cd "$SU/cwd" && HOOKPROF_OUTPUT="$SU/rootonly/trace.hookprof" exec timeout 10 \
		setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$SU/nested_suid" >"$SU/out" 2>"$SU/err"); } 2>/dev/null
	RC=$?
	check "$label: exit status 0, its output" "status $RC, stdout '$(brief "$SU/out")'" \
		[ $RC = 0 -a "$(cat "$SU/out")" = "$NESTED_OUT" ]
	check "$label: no file in the root-only directory" "files: $(ls -A "$SU/rootonly" | tr '\n' ' ')" \
		[ -z "$(ls -A "$SU/rootonly")" ]
	check "$label: no file in the working directory either" "files: $(ls -A "$SU/cwd" | tr '\n' ' ')" \
		[ -z "$(ls -A "$SU/cwd")" ]
	check "$label: one warning line: not traced" "stderr: $(brief "$SU/err")" \
		one_line "$SU/err" '^hookprof: set-user-ID or set-group-ID program run by another user: this run is not traced$'
fi
[ -n "$SU" ] && rm -rf "$SU"

# ---- a full disk -----------------------------------------------------------

# A 2 MiB file system and a trace of some 6 MB: the program runs on
# untouched, one warning says where the trace ends, and the file ends at a
# record boundary with what fit (a stress: several runs, both modes).
FULL=$T/full
mkdir -p "$FULL"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=2m hookprof-full "$FULL" 2>"$T/mount.err"; then
	echo "# skip: full disk checks: cannot mount a 2 MiB tmpfs ($(brief "$T/mount.err"))"
else
	BIG_OUT=$(printf 'bigtrace %s\n' 100000 200000 300000 400000 "done 400000")
	for spec in stream:8M stream:8M stream:128K stream:8M ring:32M; do
		mode=${spec%:*}
		label="full disk (2 MiB tmpfs), $mode mode, HOOKPROF_BUFFER=${spec#*:}"
		rm -f "$FULL"/*
		run_guarded preload "full-$mode" bigtrace HOOKPROF_OUTPUT="$FULL/trace.hookprof" HOOKPROF_MODE=$mode HOOKPROF_BUFFER="${spec#*:}"
		check "$label: exit status 0" "got $RC; stderr: $(brief "$DIR/err")" [ "$RC" = 0 ]
		check "$label: program output intact" "got '$(brief "$DIR/out")'" [ "$(cat "$DIR/out")" = "$BIG_OUT" ]
		check "$label: one warning: no space left, the trace ends here" "stderr: $(brief "$DIR/err")" \
			one_line "$DIR/err" "^hookprof: cannot write trace file '$FULL/trace.hookprof': No space left on device; the trace ends here\$"
		walk "$FULL/trace.hookprof"
		check "$label: the file ends at a record boundary, with what fit" "$WALK" \
			[ "$(walked header)" = OK -a "$(walked tail)" = 0 -a "$(walked records)" -gt 10 -a "$(walked clocks)" -ge 2 ]
		report "$label: report --partial" --partial "$FULL/trace.hookprof"
	done
	umount "$FULL"
fi

# ---- settings and special outputs --------------------------------------------

label="HOOKPROF_BUFFER=64G (more than 1G per thread)"
if ! skipped_under thread -- "$label" "$DEEP_STACK"; then
	run_guarded preload buffer64g recursion HOOKPROF_BUFFER=64G
	check "$label: exit status 0, its output" "status $RC, stdout '$(brief "$DIR/out")'" \
		[ "$RC" = 0 -a "$(cat "$DIR/out")" = "recursion 100000 6765" ]
	check "$label: one warning: 1G is used" "stderr: $(brief "$DIR/err")" \
		one_line "$DIR/err" "^hookprof: HOOKPROF_BUFFER='64G' is more than 1G per thread; using 1G\$"
	recursion_checks "$label" recursion
	zero_lost "$label"
fi

# A thread whose buffer cannot be mapped loses its events, counted, and
# does not try again for each of them (it did: one failed mmap per event).
label="1G buffers under ulimit -v 1000000 (every thread's mmap fails)"
if skipped_under address thread -- "$label" "the sanitizer reserves terabytes of address space for its shadow memory at start-up, which ulimit -v forbids"; then
	:
elif ! command -v strace >/dev/null 2>&1; then
	echo "# skip: $label: no strace to count the mmap calls"
else
	RUNS=$((RUNS + 1))
	DIR=$T/run/$RUNS-nobuffer
	TRACE=$DIR/trace.hookprof
	mkdir -p "$DIR"
	{ (cd "$DIR" && ulimit -v 1000000 && exec timeout 60 strace -f -c -o "$DIR/strace" -e trace=mmap \
		env HOOKPROF_OUTPUT="$TRACE" HOOKPROF_BUFFER=1G LD_PRELOAD="$LIB" "$B/recursion" >out 2>err); } 2>/dev/null
	RC=$?
	failed=$(awk '$NF == "mmap" { print (NF == 6 ? $5 : 0) }' "$DIR/strace" 2>/dev/null)
	check "$label: exit status 0, its output" "status $RC, stdout '$(brief "$DIR/out")'" \
		[ "$RC" = 0 -a "$(cat "$DIR/out")" = "recursion 100000 6765" ]
	check "$label: one warning line" "stderr: $(brief "$DIR/err")" \
		one_line "$DIR/err" '^hookprof: cannot map a 1024 MiB event buffer for thread [0-9]+; its events are counted lost$'
	check "$label: at most a few failed mmap calls, not one per event" "failed mmap calls: '$failed'" \
		[ -n "$failed" ] && [ "$failed" -ge 1 -a "$failed" -le 20 ]
	check "$label: every event counted lost (243786)" "$("$HP" info "$TRACE" 2>&1 | grep -i lost | tr '\n' '|')" \
		sh -c '"$1" info "$2" 2>/dev/null | grep -Eq "^lost: +243786 "' sh "$HP" "$TRACE"
	check "$label: info says why: no buffer could be mapped" "$("$HP" info "$TRACE" 2>&1 | grep -i -A2 lost | tr '\n' '|')" \
		sh -c '"$1" info "$2" 2>/dev/null | grep -Eq "^ +243786 no buffer could be mapped$"' sh "$HP" "$TRACE"
fi

for dev in /dev/null /dev/full; do
	label="HOOKPROF_OUTPUT=$dev"
	existed=0
	[ -e "$dev.1" ] && existed=1
	run_guarded preload "dev-${dev#/dev/}" nested_O0 HOOKPROF_OUTPUT=$dev
	check "$label: exit status 0, its output" "status $RC, stdout '$(brief "$DIR/out")'" \
		[ "$RC" = 0 -a "$(cat "$DIR/out")" = "$NESTED_OUT" ]
	check "$label: written as it is, no $dev.1 made" "$(ls -l "$dev.1" 2>&1)" \
		[ $existed = 1 -o ! -e "$dev.1" ]
	check "$label: still a character device" "$(ls -l "$dev")" [ -c "$dev" ]
	if [ $dev = /dev/null ]; then
		check "$label: nothing on stderr" "stderr: $(brief "$DIR/err")" [ ! -s "$DIR/err" ]
	else
		check "$label: one warning: no space left" "stderr: $(brief "$DIR/err")" \
			one_line "$DIR/err" "^hookprof: cannot write trace file '/dev/full': No space left on device; the trace ends here\$"
	fi
done

# A FIFO with a reader gets the trace; one without is refused at once.
F=$T/fifo
mkdir -p "$F"
label="HOOKPROF_OUTPUT naming a FIFO that cat reads"
if mkfifo "$F/fifo"; then
	start_fifo_reader "$F/fifo" "$F/copy.hookprof"
	run_guarded preload fifo nested_O0 HOOKPROF_OUTPUT="$F/fifo"
	wait_fifo_reader
	check "$label: exit status 0, its output" "status $RC, stdout '$(brief "$DIR/out")'" \
		[ "$RC" = 0 -a "$(cat "$DIR/out")" = "$NESTED_OUT" ]
	check "$label: nothing on stderr, no $F/fifo.1" "stderr: $(brief "$DIR/err"); files: $(ls "$F" | tr '\n' ' ')" \
		[ ! -s "$DIR/err" -a ! -e "$F/fifo.1" ]
	if report "$label: the trace cat read" "$F/copy.hookprof"; then
		expect_calls "$label" nested_O0 main=1 nest_a=3 nest_b=6 nest_c=30
	fi
	rm -f "$F/fifo" "$F/copy.hookprof"
else
	nok "$label" "mkfifo failed"
fi
label="HOOKPROF_OUTPUT naming a FIFO nobody reads"
mkfifo "$F/lonely"
run_guarded preload fifo-lonely nested_O0 HOOKPROF_OUTPUT="$F/lonely"
check "$label: does not wait: exit status 0, its output" "status $RC, stdout '$(brief "$DIR/out")'" \
	[ "$RC" = 0 -a "$(cat "$DIR/out")" = "$NESTED_OUT" ]
check "$label: one warning: nothing reads it" "stderr: $(brief "$DIR/err")" \
	one_line "$DIR/err" "^hookprof: nothing reads the FIFO '$F/lonely'; this run is not traced\$"
check "$label: no $F/lonely.1" "files: $(ls "$F" | tr '\n' ' ')" [ ! -e "$F/lonely.1" ]

# A long path in a warning: the reason still comes, at the end of the line.
long=$(printf '%0700d' 0 | tr 0 a)
label="HOOKPROF_OUTPUT with a 700-byte directory name that does not exist"
run_guarded preload longpath nested_O0 HOOKPROF_OUTPUT="/nonexistent/$long/x"
check "$label: one warning with the whole path and the reason" "stderr: $(brief "$DIR/err")" \
	one_line "$DIR/err" "^hookprof: cannot create trace file '/nonexistent/$long/x': No such file or directory; this run is not traced\$"

# ---- descriptors -----------------------------------------------------------

# A program that opens files up to its limit gets as many as without us:
# under a fixed limit (soft = hard) no descriptor is kept; under a soft
# limit, ours lies above it. (Ring mode under the fixed limit: no writer
# thread opens the file for a batch while the program counts.)
for spec in "-n ring" "-Sn stream" "-Sn ring"; do
	opt=${spec% *}
	mode=${spec#* }
	label="ulimit $opt 8, $mode mode: the program opens as many files as without hookprof"
	want=$( (ulimit $opt 8 && cd "$T" && exec "$B/fdlimit") 2>&1)
	RUNS=$((RUNS + 1))
	DIR=$T/run/$RUNS-fdlimit
	TRACE=$DIR/trace.hookprof
	mkdir -p "$DIR"
	{ (cd "$DIR" && ulimit $opt 8 && HOOKPROF_OUTPUT="$TRACE" HOOKPROF_MODE=$mode LD_PRELOAD="$LIB" \
		exec "$B/fdlimit" >out 2>err); } 2>/dev/null
	RC=$?
	check_run "$label" preload 0 "$want"
	check "ulimit $opt 8: without hookprof the program opens some files" "got '$want'" \
		[ "${want#fdlimit opened }" -ge 1 ] 2>/dev/null
	if report "$label" "$TRACE"; then
		expect_calls "$label" fdlimit main=1 fd_work=10
	fi
done

# The program closed fd 2 and opened a file of its own there: a warning of
# ours (the trace was deleted, then hookprof_flush) must not go into it.
label="fd 2 closed and reused by the program, then a warning"
OWN=$T/own-stderr.txt
run_guarded linked stderrreuse stderrreuse_linked -- "$OWN"
check "$label: exit status 0, flush says -1" "status $RC, stdout '$(brief "$DIR/out")'" \
	[ "$RC" = 0 -a "$(cat "$DIR/out")" = "stderrreuse -1" ]
check "$label: the program's file holds only its own line" "file: $(brief "$OWN")" [ "$(cat "$OWN")" = own ]

# A daemon closes every descriptor (and may chroot, where the trace's path
# is out of reach): the trace stays complete.
CHROOT=$T/chroot-empty
mkdir -p "$CHROOT"
for spec in linked:close: linked:close_range: linked:closefrom: linked:close:chroot \
	linked:close_range:chroot linked:closefrom:chroot preload:close:chroot preload:close_range:; do
	IFS=: read -r mode how where <<<"$spec"
	bin=closeall
	[ $mode = linked ] && bin=closeall_linked
	label="program closes every descriptor ($how)${where:+ then chroots}, $mode"
	# LeakSanitizer's exit check reads /proc/<pid>/task, which the chroot
	# has not: a fatal error, exit status 1. Off for the chroot runs.
	if [ -n "$where" ]; then
		run_guarded $mode "closeall-$how-$where" $bin "$NO_LSAN" -- "$how" "$CHROOT"
	else
		run_guarded $mode "closeall-$how" $bin -- "$how"
	fi
	check_run "$label" $mode 0 "closeall started"
	if report "$label (no --partial)" "$TRACE"; then
		expect_calls "$label" $bin main=1 ca_work=30
	fi
done

# Killed by SIGKILL 5 ms after start: the trace already holds a clock
# calibration (two CLOCK records), in both modes. The kill may cut the
# writer's last write short: report --partial then says where, in one line
# (partial_stderr_ok, section 20).
partial_report_ok() { # TRACE BASE
	"$HP" report --partial --format=csv "$1" >"$2.csv" 2>"$2.err" &&
		csv_to_tsv "$2.csv" >"$2.tsv" && partial_stderr_ok "$2.err"
}
for mode in stream ring; do
	label="SIGKILL 5 ms after start, $mode mode"
	run_guarded preload "spin-$mode" spin HOOKPROF_MODE=$mode -- 5
	check "$label: killed (status 137)" "status $RC, stdout '$(brief "$DIR/out")'" \
		[ "$RC" = 137 -a "$(cat "$DIR/out")" = "spin killed" ]
	walk "$TRACE"
	check "$label: the trace holds two CLOCK records" "$WALK" \
		[ "$(walked header)" = OK -a "$(walked clocks)" -ge 2 ]
	partial_report_ok "$TRACE" "$DIR/partial"
	rc=$?
	check "$label: report --partial reads it (exit 0, a CSV; on stderr at most where the kill cut it)" \
		"$(brief "$DIR/partial.err")" [ $rc = 0 ]
done
