# tests/e2e/sections/60-fork.sh - process trees: a forked child is traced
# into its own trace (its frames open at the fork re-entered, so its counts
# are exact), raw forks, daemon(), system(), posix_spawn(), fork+exec,
# `hookprof record -d` and `hookprof report DIR [--per-process]`; and the
# thread stress (10,000 short threads, 64 live ones). Sourced by run.sh.

build forktree gcc "${IF[@]}" -O1 -pthread "$SRC/forktree.c"
build forktree_linked gcc "${IF[@]}" -O0 -pthread "$SRC/forktree.c" "${LINK[@]}"
build rawforkchunks gcc "${IF[@]}" -O1 "$SRC/rawforkchunks.c"
build spawnkinds gcc "${IF[@]}" -O1 "$SRC/spawnkinds.c"
build livethreads gcc "${IF[@]}" -O1 -pthread "$SRC/livethreads.c"
build shortthreads gcc "${IF[@]}" -O1 -pthread "$SRC/shortthreads.c"

# LeakSanitizer's exit check in a child forked from a multi-threaded parent
# (the writer thread at least) warns "Running thread N was not suspended"
# (gcc 12's ASan has no fork interceptor: the parent's threads stay in its
# books), and can hang on an allocator lock another thread held at the fork.
# Off ($NO_LSAN, run.sh) for the programs that fork, as for rawfork there.

# fork_run MODE NAME BIN [VAR=VALUE...] [-- ARGS...]: like run_guarded, with
# a longer limit (the stress runs share a loaded machine); LSan off for the
# programs that fork.
fork_run() {
	local mode=$1 name=$2 bin=$3 vars=()
	shift 3
	case $bin in forktree* | rawfork* | spawnkinds) vars+=("$NO_LSAN") ;; esac
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		vars+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	[ "$mode" = preload ] && vars=(LD_PRELOAD="$LIB" "${vars[@]}")
	RUNS=$((RUNS + 1))
	DIR=$T/run/$RUNS-$name
	TRACE=$DIR/trace.hookprof
	mkdir -p "$DIR"
	{ (cd "$DIR" && exec timeout 120 env HOOKPROF_OUTPUT="$TRACE" "${vars[@]}" "$B/$bin" "$@" >out 2>err); } 2>/dev/null
	RC=$?
}

# fork_record NAME BIN ARGS...: hookprof record -d $DIR/tree -- BIN ARGS.
fork_record() {
	local name=$1 bin=$2
	shift 2
	RUNS=$((RUNS + 1))
	DIR=$T/run/$RUNS-$name
	TREE=$DIR/tree
	mkdir -p "$DIR"
	{ (cd "$DIR" && exec timeout 120 env "$NO_LSAN" "$HP" record -d "$TREE" -- "$B/$bin" "$@" >out 2>err); } 2>/dev/null
	RC=$?
}

# The traces in a directory, one a line, sorted.
traces_in() { ls "$1" 2>/dev/null | grep -E '\.hookprof(\.[0-9]+)?$' | sort; }

# The pid in a PROGRAM-PID.hookprof name.
pid_of_name() { local n=${1##*-}; echo "${n%.hookprof}"; }

# info_names_parent FILE: `hookprof info` shows the PARENT record of a
# forked child whose frames were re-entered.
info_names_parent() {
	"$HP" info "$1" 2>/dev/null |
		grep -qE '^parent:   pid [0-9]+, forked from its trace .+\.hookprof(\.[0-9]+)? \(frames open at the fork re-entered\)$'
}

# fork_children LABEL MODULE N K FILE...: each FILE is a forked child's trace
# of forktree: ft_child K times, ft_spawn and main once (entered in the
# parent, re-entered at the fork, exited in the child), no ft_parent.
fork_children() {
	local label=$1 module=$2 n=$3 k=$4 f i=0
	shift 4
	check "$label: $n child traces" "got $#: $*" [ "$#" = "$n" ]
	for f in "$@"; do
		i=$((i + 1))
		if report "$label: child trace $i" "$f"; then
			expect_calls "$label: child trace $i" "$module" main=1 ft_spawn=1 ft_child="$k"
			check "$label: child trace $i holds none of the parent's calls" \
				"ft_parent: $(field ft_parent "" 2), ft_busy: $(field ft_busy "" 2)" \
				[ -z "$(field ft_parent "" 2)" -a -z "$(field ft_busy "" 2)" ]
			check_times "$label: child trace $i" flat
		fi
		check "$label: child trace $i: info names the parent's pid and trace" \
			"$("$HP" info "$f" 2>&1 | grep -E '^(pid|parent):' | tr '\n' '|')" info_names_parent "$f"
	done
}

# ---- fork(): one trace per process, named by the numbered-name rule ----------

for mode in preload linked ring; do
	case $mode in
	linked) bin=forktree_linked how=linked vars=() ;;
	ring) bin=forktree how=preload vars=(HOOKPROF_MODE=ring) ;;
	*) bin=forktree how=preload vars=() ;;
	esac
	label="fork() of 4 children, HOOKPROF_OUTPUT a plain file ($mode)"
	fork_run "$how" "forktree-$mode" "$bin" "${vars[@]}" -- 4 1000
	check_run "$label" "$how" 0 "forktree 4 children"
	check "$label: the children's traces are trace.hookprof.1 to .4" "files: $(ls "$DIR" | tr '\n' ' ')" \
		[ "$(traces_in "$DIR" | tr '\n' ' ')" = "trace.hookprof trace.hookprof.1 trace.hookprof.2 trace.hookprof.3 trace.hookprof.4 " ]
	if report "$label: the parent's trace" "$TRACE"; then
		expect_calls "$label: the parent's trace" "$bin" main=1 ft_parent=1000 ft_spawn=4
		check "$label: the parent's trace holds none of the children's calls" "ft_child: $(field ft_child "" 2)" \
			[ -z "$(field ft_child "" 2)" ]
	fi
	fork_children "$label" "$bin" 4 1000 "$DIR"/trace.hookprof.[0-9]*
done

# Default names: PROGRAM-PID.hookprof in the working directory, for each.
label="fork() of 3 children, no HOOKPROF_OUTPUT"
RUNS=$((RUNS + 1))
DIR=$T/run/$RUNS-forktree-default
mkdir -p "$DIR"
{ (cd "$DIR" && exec timeout 60 env "$NO_LSAN" LD_PRELOAD="$LIB" "$B/forktree" 3 500 >out 2>err); } 2>/dev/null
RC=$?
check "$label: exit status 0, nothing on stderr" "status $RC, stderr: $(brief "$DIR/err")" [ "$RC" = 0 -a ! -s "$DIR/err" ]
check "$label: 4 traces named forktree-PID.hookprof" "files: $(ls "$DIR" | tr '\n' ' ')" \
	[ "$(traces_in "$DIR" | grep -c -x 'forktree-[0-9]*\.hookprof')" = 4 ]
if report "$label: all merged" $(traces_in "$DIR" | sed "s|^|$DIR/|"); then
	expect_calls "$label: all merged" forktree main=4 ft_parent=500 ft_spawn=6 ft_child=1500
fi

# %p in HOOKPROF_OUTPUT: each process its own pid.
label="fork() of 2 children, HOOKPROF_OUTPUT=t-%p.hookprof"
RUNS=$((RUNS + 1))
DIR=$T/run/$RUNS-forktree-pid
mkdir -p "$DIR"
{ (cd "$DIR" && exec timeout 60 env "$NO_LSAN" LD_PRELOAD="$LIB" HOOKPROF_OUTPUT='t-%p.hookprof' "$B/forktree" 2 100 >out 2>err); } 2>/dev/null
RC=$?
check "$label: exit status 0, nothing on stderr" "status $RC, stderr: $(brief "$DIR/err")" [ "$RC" = 0 -a ! -s "$DIR/err" ]
check "$label: 3 traces named t-PID.hookprof" "files: $(ls "$DIR" | tr '\n' ' ')" \
	[ "$(traces_in "$DIR" | grep -c -x 't-[0-9]*\.hookprof')" = 3 ]

# Another thread runs in the parent at each fork: its events are not the child's.
label="fork() of 4 children while another thread runs"
# gcc 12's ASan takes no allocator lock around fork: the program's own busy
# thread inside ASan's allocator at a fork (its start-up, its malloc) leaves
# the child a lock held for ever (seen: 1 run in 2 of check-asan hung).
if ! skipped_under address -- "$label" "gcc 12's ASan has no fork interceptor: a child forked while the program's other thread is inside ASan's allocator inherits its lock and hangs"; then
	fork_run preload forktree-thread forktree -- 4 1000 thread
	busy=$(sed -n 's/^busy //p' "$DIR/out")
	check "$label: exit status 0" "got $RC; stderr: $(brief "$DIR/err")" [ "$RC" = 0 ]
	check "$label: nothing on stderr" "stderr: $(brief "$DIR/err")" [ ! -s "$DIR/err" ]
	if report "$label: the parent's trace" "$TRACE"; then
		expect_calls "$label: the parent's trace" forktree main=1 ft_parent=1000 ft_spawn=4 ft_busy="${busy:-?}"
	fi
	fork_children "$label" forktree 4 1000 "$DIR"/trace.hookprof.[0-9]*
fi

# ---- record -d and report DIR -------------------------------------------------

label="record -d DIR of a process tree (5 children)"
fork_record forktree-record forktree 5 200
check "$label: exit status 0" "got $RC; stderr: $(brief "$DIR/err")" [ "$RC" = 0 ]
check "$label: 6 traces in DIR" "files: $(ls "$TREE" 2>/dev/null | tr '\n' ' ')" [ "$(traces_in "$TREE" | wc -l)" = 6 ]
check "$label: stderr names each of them" "stderr: $(brief "$DIR/err")" \
	[ "$(sed -n 's|^hookprof: trace written to ||p' "$DIR/err" | sed 's|.*/||' | sort | tr '\n' ' ')" = "$(traces_in "$TREE" | tr '\n' ' ')" -a "$(wc -l <"$DIR/err")" = 6 ]
root=$(sed -n '1s|^hookprof: trace written to .*/forktree-\([0-9]*\)\.hookprof$|\1|p' "$DIR/err")
check "$label: the root's trace is named first" "stderr: $(brief "$DIR/err")" [ -n "$root" ]
if report "$label: report DIR merges them" "$TREE"; then
	expect_calls "$label: report DIR" forktree main=6 ft_parent=200 ft_spawn=10 ft_child=1000
fi
"$HP" report --per-process "$TREE" >"$DIR/per" 2>"$DIR/per.err"
check "$label: report --per-process works" "status $?, stderr: $(brief "$DIR/per.err")" [ -s "$DIR/per" -a ! -s "$DIR/per.err" ]
check "$label: --per-process: the root first, then 5 sections whose parent is the root" "$(grep '^##' "$DIR/per" | tr '\n' '|')" \
	[ "$(grep -c "^## process $root, parent [0-9]*: " "$DIR/per")" = 1 -a \
	  "$(grep -c "^##   process [0-9]*, parent $root: " "$DIR/per")" = 5 -a \
	  "$(grep '^##' "$DIR/per" | head -n 1 | grep -c "process $root,")" = 1 ]
check "$label: --per-process: each child's ft_child row says 200 calls" "$(grep ft_child "$DIR/per" | tr -s ' ' | tr '\n' '|')" \
	[ "$(awk '$NF == "[forktree]" && $(NF-1) == "ft_child" && $1 == 200' "$DIR/per" | wc -l)" = 5 ]

# ---- raw forks ---------------------------------------------------------------

RAW_FORK_TSAN="TSan sees no fork there: the parent's writer thread is still in its books, and the child's re-initialised locks race with it"
for clock in tsc monotonic; do
	label="syscall(SYS_fork) child recording 20000 events, HOOKPROF_CLOCK=$clock"
	skipped_under thread -- "$label" "$RAW_FORK_TSAN" && continue
	fork_run preload "rawforkchunks-$clock" rawforkchunks HOOKPROF_CLOCK=$clock
	check_run "$label" preload 0 "rawforkchunks child exit 0"
	if report "$label: the parent's trace" "$TRACE"; then
		expect_calls "$label: the parent's trace" rawforkchunks main=1 rc_parent=6000
		check "$label: the parent's trace holds none of the child's calls" "rc_child: $(field rc_child "" 2)" \
			[ -z "$(field rc_child "" 2)" ]
	fi
	if report "$label: the child's trace" "$TRACE.1"; then
		expect_calls "$label: the child's trace" rawforkchunks rc_child=10000
		check "$label: the child's trace holds none of the parent's calls" "rc_parent: $(field rc_parent "" 2)" \
			[ -z "$(field rc_parent "" 2)" ]
	fi
done

for how in syscall _Fork; do
	label="child of raw fork ($how) calling exit(3): its own trace"
	skipped_under thread -- "$label" "$RAW_FORK_TSAN" && continue
	fork_run preload "rawfork-child-$how" rawfork -- $how
	check_run "$label" preload 0 "rawfork child exit 3"
	if report "$label" "$TRACE.1"; then
		expect_calls "$label" rawfork rf_child=50
	fi
done

# ---- system(), posix_spawn(), fork+exec, daemon() ------------------------------

for how in system spawn exec; do
	label="$how of an instrumented program, record -d"
	fork_record "spawnkinds-$how" spawnkinds "$how" "$B/nested_O0"
	check "$label: exit status 0" "got $RC; stderr: $(brief "$DIR/err")" [ "$RC" = 0 ]
	check "$label: program output" "got '$(brief "$DIR/out")'" \
		[ "$(cat "$DIR/out")" = "$(printf 'nested done 1\nspawnkinds %s 0' "$how")" ]
	check "$label: 2 traces, no other (the forked child execs before any event)" "files: $(ls "$TREE" | tr '\n' ' ')" \
		[ "$(traces_in "$TREE" | wc -l)" = 2 ]
	if report "$label: the parent's trace" "$TREE"/spawnkinds-*.hookprof; then
		expect_calls "$label: the parent's trace" spawnkinds main=1 sk_parent=200 sk_start=1
	fi
	if report "$label: the child's trace" "$TREE"/nested_O0-*.hookprof; then
		expect_calls "$label: the child's trace" nested_O0 main=1 nest_a=3 nest_b=6 nest_c=30
	fi
done

label="daemon(), record -d"
DAEMON_OUT=$T/daemon.out
fork_record spawnkinds-daemon spawnkinds daemon "$DAEMON_OUT"
for i in $(seq 50); do [ -s "$DAEMON_OUT" ] && break; sleep 0.1; done
# The daemon writes its trace's end after the file: wait until it is gone.
for f in $(traces_in "$TREE"); do
	p=$(pid_of_name "$f")
	for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
done
check "$label: exit status 0 and the daemon ran" "got $RC; stderr: $(brief "$DIR/err"); daemon: $(brief "$DAEMON_OUT")" \
	[ "$RC" = 0 -a "$(cat "$DAEMON_OUT" 2>/dev/null)" = "daemon done" ]
check "$label: 2 traces" "files: $(ls "$TREE" | tr '\n' ' ')" [ "$(traces_in "$TREE" | wc -l)" = 2 ]
set -- $(traces_in "$TREE")
if [ $# = 2 ]; then
	# The parent's pid is the smaller, unless pids wrapped: tell them by their calls.
	for f in "$@"; do
		if "$HP" report --format=csv "$TREE/$f" 2>/dev/null | grep -q '^sk_parent,'; then P=$TREE/$f; else C=$TREE/$f; fi
	done
	if report "$label: the parent's trace (finished before daemon's _exit)" "$P"; then
		expect_calls "$label: the parent's trace" spawnkinds main=1 sk_parent=100 sk_start=1
	fi
	if report "$label: the daemon's trace" "$C"; then
		expect_calls "$label: the daemon's trace" spawnkinds main=1 sk_start=1 sk_daemon=500
	fi
fi

# ---- many threads ---------------------------------------------------------------

label="10000 short threads, at most 8 at a time"
fork_run preload shortthreads shortthreads -- 10000
check_run "$label" preload 0 "shortthreads 10000"
if report "$label" "$TRACE"; then
	expect_calls "$label" shortthreads main=1 st_thread=10000 st_work=50000
	zero_lost "$label"
fi

for mode in stream ring; do
	label="64 threads alive at once, $mode mode"
	fork_run preload "livethreads-$mode" livethreads HOOKPROF_MODE=$mode -- 64 20000
	check_run "$label" preload 0 "livethreads 64"
	if report "$label" "$TRACE"; then
		expect_calls "$label" livethreads main=1 lt_thread=64 lt_work=1280000
		zero_lost "$label"
	fi
done
