# tests/e2e/sections/95-cli.sh - the command line as a new user finds it
# (issue 6): each command's own help, `help COMMAND` and `version`; info
# with no trace, with a directory; report with a directory; the duration of
# a killed run; what a run that traces nothing, or cannot, says on stderr;
# HOOKPROF_* settings that are wrong. (Sourced by tests/e2e/run.sh.)

CLI=$T/cli
mkdir -p "$CLI"

# ---- help -------------------------------------------------------------------
for cmd in record report info dump export; do
	"$HP" "$cmd" --help >"$CLI/$cmd.help" 2>"$CLI/$cmd.herr"
	rc=$?
	check "$cmd --help: exit 0, its own usage line on stdout, nothing on stderr" \
		"status $rc, $(brief "$CLI/$cmd.help") $(brief "$CLI/$cmd.herr")" \
		[ $rc = 0 -a "$(head -n1 "$CLI/$cmd.help" | cut -d' ' -f1-3)" = "usage: hookprof $cmd" -a ! -s "$CLI/$cmd.herr" ]
	"$HP" help "$cmd" >"$CLI/$cmd.help2" 2>&1
	check "help $cmd: the same text as $cmd --help" "$(brief "$CLI/$cmd.help2")" \
		cmp -s "$CLI/$cmd.help" "$CLI/$cmd.help2"
done
check "record --help names its options (--output, --dir, --mode, --buffer, --clock)" "$(brief "$CLI/record.help")" \
	grep -q -- '--clock=' "$CLI/record.help"
check "report --help names its options, not record's" "$(brief "$CLI/report.help")" \
	sh -c "grep -q -- '--sort=' '$CLI/report.help' && ! grep -q -- '--clock=' '$CLI/report.help'"
check "dump --help names --partial" "$(brief "$CLI/dump.help")" grep -q -- '--partial' "$CLI/dump.help"
"$HP" info -h >"$CLI/info.h" 2>&1
check "info -h: as info --help" "$(brief "$CLI/info.h")" cmp -s "$CLI/info.help" "$CLI/info.h"
"$HP" --help >"$CLI/global.help" 2>&1
missing=""
for cmd in record report info dump export version help; do
	grep -q "^  $cmd " "$CLI/global.help" || missing="$missing $cmd"
done
check "the global help lists every command briefly" "missing:$missing; $(brief "$CLI/global.help")" \
	[ -z "$missing" -a "$(wc -l <"$CLI/global.help")" -le 30 ]
check "help with no command: the global help" "" sh -c "'$HP' help | cmp -s - '$CLI/global.help'"
"$HP" version >"$CLI/version" 2>&1
rc=$?
check "version: a command, as --version" "status $rc, $(brief "$CLI/version")" \
	sh -c "[ $rc = 0 ] && '$HP' --version | cmp -s - '$CLI/version' && grep -q '^hookprof [0-9]' '$CLI/version'"
"$HP" help nosuch >"$CLI/nosuch" 2>&1
rc=$?
check "help of no such command: exit 2, one line" "status $rc, $(brief "$CLI/nosuch")" \
	[ $rc = 2 -a "$(wc -l <"$CLI/nosuch")" = 1 ]

# ---- info and report: no trace, a directory ---------------------------------
build cli_nested gcc "${IF[@]}" -O1 "$SRC/nested.c"
build cli_plain gcc -g -O1 "$SRC/nested.c"
# Linked as hookprof.pc links it: kept with --no-as-needed, or the linker
# would drop a library the program never calls, and nothing could warn.
build cli_plain_linked gcc -g -O1 "$SRC/nested.c" -Wl,--push-state,--no-as-needed "${LINK[@]}" -Wl,--pop-state
build cli_progress gcc "${IF[@]}" -O1 "$SRC/progress.c"
TD=$CLI/traces
mkdir -p "$TD"
(cd "$TD" && HOOKPROF_OUTPUT=$TD/one.hookprof LD_PRELOAD=$LIB "$B/cli_nested" >/dev/null 2>&1)
sleep 0.05 # a newer modification time for the second
(cd "$TD" && HOOKPROF_OUTPUT=$TD/two.hookprof LD_PRELOAD=$LIB "$B/cli_nested" >/dev/null 2>&1)
(cd "$TD" && "$HP" info >"$CLI/info.newest" 2>"$CLI/info.newest.err")
rc=$?
check "info with no trace: the newest *.hookprof here" "status $rc, $(brief "$CLI/info.newest") $(brief "$CLI/info.newest.err")" \
	[ $rc = 0 -a "$(grep '^trace:' "$CLI/info.newest")" = "trace:    two.hookprof" ]
"$HP" info "$TD" >"$CLI/info.dir" 2>"$CLI/info.dir.err"
rc=$?
check "info DIR: each trace in it, one after the other" "status $rc, $(grep '^trace:' "$CLI/info.dir" | tr '\n' '|') $(brief "$CLI/info.dir.err")" \
	[ $rc = 0 -a "$(grep -c '^trace:' "$CLI/info.dir")" = 2 -a "$(grep -c '^complete: *yes' "$CLI/info.dir")" = 2 ]
if report "report DIR" "$TD"; then
	expect_calls "report DIR (both traces)" cli_nested main=2 nest_a=6 nest_b=12 nest_c=60
fi
(cd "$CLI" && "$HP" info >"$CLI/info.none" 2>&1)
rc=$?
check "info with no trace and none here: exit 1, one line" "status $rc, $(brief "$CLI/info.none")" \
	[ $rc = 1 -a "$(wc -l <"$CLI/info.none")" = 1 ]
"$HP" info --bogus >"$CLI/info.bogus" 2>&1
rc=$?
check "info --bogus: a usage error (exit 2), not a file name" "status $rc, $(brief "$CLI/info.bogus")" \
	[ $rc = 2 -a "$(wc -l <"$CLI/info.bogus")" = 1 ]

# ---- what info says of the clock, the buffer, the times -----------------------
info1=$CLI/info.one
"$HP" info "$TD/one.hookprof" >"$info1" 2>&1
check "info: the clock's resolution (its smallest step, in ticks and ns)" "$(grep '^clock:' "$info1")" \
	grep -Eq '^clock: .*, resolution [0-9]+ ticks? = [0-9.]+ ns' "$info1"
check "info: the buffer per thread (default 8 MiB)" "$(grep '^buffer:' "$info1")" \
	grep -q '^buffer: *8 MiB per thread$' "$info1"
check "info: times are wall-clock, summed over threads" "$(brief "$info1")" \
	grep -q '^times: *wall-clock; .*summed over its threads' "$info1"
check "info: the events counted without decoding (30+6+3+1 calls, 2 events each)" "$(grep '^events:' "$info1")" \
	grep -q '^events: *80$' "$info1"

# ---- a run killed: its duration is its last event ---------------------------
KD=$CLI/killed
mkdir -p "$KD"
if [ -x "$B/cli_progress" ]; then
	(cd "$KD" && HOOKPROF_OUTPUT=$KD/k.hookprof LD_PRELOAD=$LIB exec "$B/cli_progress" "$KD/said" >/dev/null 2>&1) &
	pid=$!
	# past the first CLOCK of the second (about 1 s): events after it
	sleep 1.6
	kill -KILL $pid 2>/dev/null
	wait $pid 2>/dev/null
	"$HP" info "$KD/k.hookprof" >"$KD/info" 2>"$KD/info.err"
	"$HP" dump --partial "$KD/k.hookprof" >"$KD/dump" 2>/dev/null
	dur=$(awk '/^duration:/ { printf "%.0f", $2 * 1e9 }' "$KD/info")
	last=$(awk '$3 == "enter" || $3 == "exit" { if ($2 > m) m = $2 } END { printf "%.0f", m }' "$KD/dump")
	check "a killed run: info's duration reaches its last event (info $dur ns, dump's last $last ns)" \
		"$(brief "$KD/info.err") $(grep -E '^(duration|complete):' "$KD/info" | tr '\n' '|')" \
		[ -n "$dur" -a -n "$last" -a "${dur:-0}" -ge "${last:-1}" -a "${last:-0}" -gt 0 ]
	check "a killed run: info says the duration ends at the last event" "$(grep '^duration:' "$KD/info")" \
		grep -q '^duration: .*(to the last event: the run was cut short)' "$KD/info"
else
	nok "a killed run: info's duration" "cli_progress was not built"
fi

# ---- runs that trace nothing --------------------------------------------------
# one_line FILE REGEX: FILE is exactly one line, matching.
cli_one_line() { [ "$(wc -l <"$1")" = 1 ] && grep -Eq "$2" "$1"; }
for how in preload record linked; do
	case $how in
	preload) bin=cli_plain ;;
	record) bin=cli_plain ;;
	linked) bin=cli_plain_linked ;;
	esac
	[ -x "$B/$bin" ] || { nok "no instrumented function ($how)" "$bin was not built"; continue; }
	run "$how" "plain-$how" "$bin"
	check "no instrumented function ($how): the program's status and output" \
		"status $RC, $(brief "$DIR/out")" [ $RC = 0 -a "$(cat "$DIR/out")" = "nested done 1" ]
	check "no instrumented function ($how): one line says so, naming the program" "$(brief "$DIR/err")" \
		cli_one_line "$DIR/err" "^hookprof: no instrumented function ran in $bin \\(pid [0-9]+\\): no trace written \\(was it built with -finstrument-functions\\?\\)$"
	check "no instrumented function ($how): no trace" "$(ls "$DIR")" [ ! -e "$TRACE" ]
done

# HOOKPROF_OUTPUT=out/ with no out: the directory is what is missing.
OD=$CLI/outdir
mkdir -p "$OD"
(cd "$OD" && HOOKPROF_OUTPUT=out/ LD_PRELOAD=$LIB "$B/cli_nested" >"$OD/out" 2>"$OD/err")
rc=$?
check "HOOKPROF_OUTPUT=out/ with no out: the program's status and output" "status $rc, $(brief "$OD/out")" \
	[ $rc = 0 -a "$(cat "$OD/out")" = "nested done 1" ]
check "HOOKPROF_OUTPUT=out/ with no out: one line, the directory does not exist" "$(brief "$OD/err")" \
	cli_one_line "$OD/err" "^hookprof: the directory 'out/' \\(HOOKPROF_OUTPUT\\) does not exist; this run is not traced$"

# A directory the program cannot write: the runtime's line, and no guess.
# As root, the run is nobody's (root writes anywhere), from copies it can read.
RO=$(mktemp -d /tmp/hookprof-ro.XXXXXX) && chmod 755 "$RO" &&
	cp "$HP" "$LIB" "$B/cli_nested" "$RO/" && mkdir -m 555 "$RO/ro"
as_user=()
if [ "$(id -u)" = 0 ]; then
	as_user=(setpriv --reuid=nobody --regid="$(id -g nobody 2>/dev/null || echo 65534)" --clear-groups)
fi
if [ -x "$RO/cli_nested" ] && "${as_user[@]}" test -x "$RO/hookprof" && ! "${as_user[@]}" test -w "$RO/ro"; then
	(cd "$RO/ro" && "${as_user[@]}" "$RO/hookprof" record "$RO/cli_nested" >"$RO/out" 2>"$RO/err")
	rc=$?
	check "record in a read-only directory: the program's status and output" "status $rc, $(brief "$RO/out")" \
		[ $rc = 0 -a "$(cat "$RO/out")" = "nested done 1" ]
	check "record in a read-only directory: one accurate line, no guess about the build" \
		"$(brief "$RO/err")" \
		cli_one_line "$RO/err" "^hookprof: cannot create trace file '$RO/ro/cli_nested-[0-9]+\\.hookprof': Permission denied; this run is not traced$"
else
	echo "# skip: record in a read-only directory: no user to run it as who cannot write there"
fi
rm -rf "$RO"

# ---- HOOKPROF_* settings ---------------------------------------------------------
# env_run NAME VAR=VALUE...: cli_nested preloaded with those settings.
env_run() {
	local name=$1
	shift
	EDIR=$CLI/env-$name
	mkdir -p "$EDIR"
	(cd "$EDIR" && env HOOKPROF_OUTPUT="$EDIR/t.hookprof" LD_PRELOAD="$LIB" "$@" "$B/cli_nested" >"$EDIR/out" 2>"$EDIR/err")
	ERC=$?
	"$HP" info "$EDIR/t.hookprof" >"$EDIR/info" 2>&1
}
env_run 1T HOOKPROF_BUFFER=1T
check "HOOKPROF_BUFFER=1T: one line, more than 1G per thread, using 1G" "$(brief "$EDIR/err")" \
	cli_one_line "$EDIR/err" "^hookprof: HOOKPROF_BUFFER='1T' is more than 1G per thread; using 1G$"
check "HOOKPROF_BUFFER=1T: info shows the buffer used (1024 MiB)" "$(grep '^buffer:' "$EDIR/info")" \
	grep -q '^buffer: *1024 MiB per thread$' "$EDIR/info"
for size in 8MB 8MiB 512K; do
	env_run "$size" HOOKPROF_BUFFER=$size
	want=$([ $size = 512K ] && echo "512 KiB" || echo "8 MiB")
	check "HOOKPROF_BUFFER=$size: taken without a word, info shows $want" \
		"status $ERC, $(brief "$EDIR/err") $(grep '^buffer:' "$EDIR/info")" \
		[ $ERC = 0 -a ! -s "$EDIR/err" -a "$(grep '^buffer:' "$EDIR/info")" = "buffer:   $want per thread" ]
done
env_run unknown HOOKPROF_BUFER=8M HOOKPROF_MODE=ring
check "an unknown HOOKPROF_BUFER: the run traced, in ring mode" "status $ERC, $(grep '^mode:' "$EDIR/info")" \
	[ $ERC = 0 -a "$(grep '^mode:' "$EDIR/info")" = "mode:     ring" ]
check "ring mode: the buffer per thread (default 8 MiB)" "$(grep '^buffer:' "$EDIR/info")" \
	[ "$(grep '^buffer:' "$EDIR/info")" = "buffer:   8 MiB per thread" ]
check "an unknown HOOKPROF_BUFER: one warning naming it and HOOKPROF_BUFFER" "$(brief "$EDIR/err")" \
	cli_one_line "$EDIR/err" \
	"^hookprof: unknown variable HOOKPROF_BUFER in the environment \\(did you mean HOOKPROF_BUFFER\\?\\); ignored$"

# ---- -o: what a command may empty or remove --------------------------------
# A view's -o never names a trace being read; one that is not a regular
# file (a FIFO here; /dev/null run as root) is written as named and never
# removed. (Regular files, links, record -o and pack -o: below.)
OUT=$CLI/outputs
mkdir -p "$OUT"
cp "$GOOD" "$OUT/self.hookprof"
"$HP" export --format=folded -o "$OUT/self.hookprof" "$OUT/self.hookprof" >"$OUT/self.out" 2>"$OUT/self.err"
rc=$?
check "export -o TRACE TRACE: refused in one line, exit 1, the trace left whole" \
	"status $rc, $(brief "$OUT/self.err")" \
	all_of [ $rc = 1 ] -- cli_one_line "$OUT/self.err" "^hookprof: -o .*self.hookprof: that is a trace to read; give another name$" \
	-- cmp -s "$GOOD" "$OUT/self.hookprof"
trace_reads() { "$HP" info "$1" >/dev/null 2>&1; }
mkfifo "$OUT/fifo"
: >"$OUT/empty.hookprof"
start_fifo_reader "$OUT/fifo" /dev/null
"$HP" export --format=folded -o "$OUT/fifo" "$OUT/empty.hookprof" >/dev/null 2>"$OUT/fifo.err"
rc=$?
wait_fifo_reader
check "export -o FIFO of a trace that fails: exit 1, the FIFO is still there" \
	"status $rc, $(brief "$OUT/fifo.err"), $(ls -l "$OUT/fifo" 2>&1)" [ $rc = 1 -a -p "$OUT/fifo" ]
start_fifo_reader "$OUT/fifo" "$OUT/fifo.trace"
"$HP" record -o "$OUT/fifo" -- "$B/cli_nested" >/dev/null 2>"$OUT/record.err"
rc=$?
wait_fifo_reader
check "record -o FIFO: exit 0, the FIFO is still there and the trace went through it" \
	"status $rc, $(brief "$OUT/record.err"), $(ls -l "$OUT/fifo" 2>&1)" \
	all_of [ $rc = 0 -a -p "$OUT/fifo" ] -- trace_reads "$OUT/fifo.trace"
timeout 20 "$HP" record -o "$OUT/fifo" -- "$B/cli_nested" >/dev/null 2>"$OUT/record-noreader.err"
rc=$?
check "record -o FIFO with no reader: exit 0 at once, the runtime's one line, no 'trace written'" \
	"status $rc, $(brief "$OUT/record-noreader.err")" \
	all_of [ $rc = 0 ] -- cli_one_line "$OUT/record-noreader.err" "nothing reads the FIFO"

# ---- -o: what a failed run leaves; inputs that are not traces ---------------
# A view's -o that is a regular file (or a link to one) is written under a
# temporary name and renamed over it once whole: a failed run leaves the old
# file, and the link, as they were. record -o moves an old trace aside and
# puts it back when the run wrote none; it refuses a directory and a link.
# pack -o keeps off a directory whose MODULES is not a pack's. A FIFO named
# as a trace is refused, not waited on.
echo "the output of an earlier run" >"$OUT/old.txt"
cp "$OUT/old.txt" "$OUT/old.copy"
ln -s old.txt "$OUT/link.txt"
"$HP" export --format=folded -o "$OUT/link.txt" "$OUT/empty.hookprof" >/dev/null 2>"$OUT/link.err"
rc=$?
check "export -o LINK of a trace that fails: exit 1, the link and its file as they were" \
	"status $rc, $(brief "$OUT/link.err"), $(ls -l "$OUT/link.txt" "$OUT/old.txt" 2>&1 | tr '\n' '|')" \
	all_of [ $rc = 1 -a -L "$OUT/link.txt" ] -- cmp -s "$OUT/old.txt" "$OUT/old.copy"
"$HP" export --format=folded -o "$OUT/old.txt" "$OUT/empty.hookprof" >/dev/null 2>&1
rc=$?
check "export -o FILE of a trace that fails: exit 1, FILE as it was" "status $rc, $(brief "$OUT/old.txt")" \
	all_of [ $rc = 1 ] -- cmp -s "$OUT/old.txt" "$OUT/old.copy"
"$HP" export --format=folded -o "$OUT/link.txt" "$GOOD" >/dev/null 2>"$OUT/link.err"
rc=$?
check "export -o LINK of a good trace: the file it names rewritten, the link kept" \
	"status $rc, $(brief "$OUT/link.err"), $(ls -la "$OUT" | tr '\n' '|')" \
	all_of [ $rc = 0 -a -L "$OUT/link.txt" -a -z "$(find "$OUT" -name '.old.txt.*')" ] -- \
	grep -q '^main' "$OUT/old.txt"

# A file with other hard links is written in place: a rename would part it
# from them.
echo "the output of an earlier run" >"$OUT/hard.txt"
ln -f "$OUT/hard.txt" "$OUT/hard2.txt"
"$HP" export --format=folded -o "$OUT/hard.txt" "$GOOD" >/dev/null 2>"$OUT/hard.err"
rc=$?
check "export -o FILE with another hard link: written in place, the other name shows it" \
	"status $rc, $(brief "$OUT/hard.err"), $(ls -li "$OUT"/hard*.txt | tr '\n' '|')" \
	all_of [ $rc = 0 -a "$OUT/hard.txt" -ef "$OUT/hard2.txt" ] -- grep -q '^main' "$OUT/hard2.txt"

# Interrupted while it writes (Ctrl-C, kill), a view takes its temporary
# file along. It is there from the start of the run: SIGINT once it is seen.
(cd "$OUT" && HOOKPROF_OUTPUT=$OUT/big.hookprof LD_PRELOAD=$LIB "$B/bigtrace" 400000 >/dev/null 2>&1)
"$HP" export --format=chrome -o "$OUT/big.json" "$OUT/big.hookprof" >/dev/null 2>&1 &
pid=$!
seen=""
for _ in $(seq 1 1000); do
	[ -n "$(find "$OUT" -maxdepth 1 -name '.big.json.*')" ] && seen=yes && break
	kill -0 $pid 2>/dev/null || break
	sleep 0.01
done
kill -INT $pid 2>/dev/null
wait $pid
rc=$?
if [ -n "$seen" ]; then
	check "export interrupted by SIGINT while it writes: status 130, its temporary file gone, no output" \
		"status $rc, $(ls -A "$OUT" | grep big | tr '\n' ' ')" \
		[ $rc = 130 -a -z "$(find "$OUT" -maxdepth 1 -name '.big.json.*')" -a ! -e "$OUT/big.json" ]
else
	SKIP=$((SKIP + 1))
	echo "skip - export interrupted by SIGINT while it writes (it ended before its temporary file was seen)"
fi
rm -f "$OUT/big.hookprof"

cp "$GOOD" "$OUT/kept.hookprof"
"$HP" record -o "$OUT/kept.hookprof" -- "$OUT/no-such-program" >/dev/null 2>"$OUT/kept.err"
rc=$?
check "record -o OLD of a program that cannot run: exit 127, one line, OLD as it was" \
	"status $rc, $(brief "$OUT/kept.err"), $(ls -la "$OUT" | tr '\n' '|')" \
	all_of [ $rc = 127 ] -- cli_one_line "$OUT/kept.err" "cannot run" -- cmp -s "$GOOD" "$OUT/kept.hookprof" \
	-- [ -z "$(find "$OUT" -name '.kept.hookprof*')" ]
"$HP" record -o "$OUT/kept.hookprof" -- "$B/cli_nested" >/dev/null 2>"$OUT/kept.err"
rc=$?
check "record -o OLD of a good run: OLD replaced by the new trace, nothing left aside" \
	"status $rc, $(brief "$OUT/kept.err"), $(ls -la "$OUT" | tr '\n' '|')" \
	all_of [ $rc = 0 -a -z "$(find "$OUT" -name '.kept.hookprof*')" ] -- trace_reads "$OUT/kept.hookprof" \
	-- sh -c "! cmp -s '$GOOD' '$OUT/kept.hookprof'"
mkdir -p "$OUT/adir"
ln -s kept.hookprof "$OUT/link.hookprof"
for o in adir link.hookprof; do
	"$HP" record -o "$OUT/$o" -- "$B/cli_nested" >/dev/null 2>"$OUT/rec-$o.err"
	rc=$?
	check "record -o $o: refused in one line, exit 1, nothing written" \
		"status $rc, $(brief "$OUT/rec-$o.err"), $(ls -A "$OUT/adir" | tr '\n' ' ')" \
		all_of [ $rc = 1 -a -z "$(ls -A "$OUT/adir")" -a ! -e "$OUT/link.hookprof.1" ] -- \
		cli_one_line "$OUT/rec-$o.err" "^hookprof: -o .*$o: a (directory|symbolic link)"
done

echo "a file" >"$OUT/dfile"
"$HP" record -d "$OUT/dfile" -- "$B/cli_nested" >/dev/null 2>"$OUT/dfile.err"
rc=$?
check "record -d FILE: refused in one line, exit 1, no FILE.1" "status $rc, $(brief "$OUT/dfile.err")" \
	all_of [ $rc = 1 -a ! -e "$OUT/dfile.1" ] -- cli_one_line "$OUT/dfile.err" "^hookprof: -d .*dfile: Not a directory$"

mkdir -p "$OUT/mine"
echo "my notes" >"$OUT/mine/MODULES"
"$HP" pack -o "$OUT/mine" "$GOOD" >/dev/null 2>"$OUT/pack.err"
rc=$?
check "pack -o DIR whose MODULES is the user's: refused in one line, exit 1, MODULES kept" \
	"status $rc, $(brief "$OUT/pack.err"), $(ls -A "$OUT/mine" | tr '\n' ' ')" \
	all_of [ $rc = 1 -a "$(cat "$OUT/mine/MODULES")" = "my notes" -a ! -e "$OUT/mine/.build-id" ] -- \
	cli_one_line "$OUT/pack.err" "MODULES is not a hookprof pack's index"

echo "a file" >"$OUT/pfile"
"$HP" pack -o "$OUT/pfile" "$GOOD" >/dev/null 2>"$OUT/pfile.err"
rc=$?
check "pack -o FILE: refused in one line, exit 1, FILE kept" "status $rc, $(brief "$OUT/pfile.err")" \
	all_of [ $rc = 1 -a "$(cat "$OUT/pfile")" = "a file" ] -- cli_one_line "$OUT/pfile.err" "^hookprof: cannot make .*pfile: Not a directory$"

mkdir -p "$OUT/fifodir"
mkfifo "$OUT/fifodir/waiting.hookprof"
timeout 10 "$HP" report "$OUT/fifodir/waiting.hookprof" >/dev/null 2>"$OUT/fifo-in.err"
rc=$?
check "report FIFO (no writer): exit 1 at once, one line" "status $rc, $(brief "$OUT/fifo-in.err")" \
	all_of [ $rc = 1 ] -- cli_one_line "$OUT/fifo-in.err" "waiting.hookprof: not a regular file$"
cp "$GOOD" "$OUT/fifodir/good.hookprof"
timeout 10 "$HP" info "$OUT/fifodir" >"$OUT/fifodir.info" 2>&1
rc=$?
check "info DIR holding a FIFO named *.hookprof: its trace read, the FIFO passed over" \
	"status $rc, $(brief "$OUT/fifodir.info")" [ $rc = 0 -a "$(grep -c '^trace:' "$OUT/fifodir.info")" = 1 ]

for o in --limit=-1 --time=nan,nan --min=nan; do
	"$HP" report "$o" "$GOOD" >/dev/null 2>"$OUT/opt.err"
	rc=$?
	check "report $o: a usage error (exit 2), one line" "status $rc, $(brief "$OUT/opt.err")" \
		all_of [ $rc = 2 ] -- cli_one_line "$OUT/opt.err" "^hookprof: --(limit|time|min)"
done
