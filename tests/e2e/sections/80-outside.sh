# tests/e2e/sections/80-outside.sh - what the world outside does to a traced
# program: signals sent by another process at random moments, and a
# symlink planted at the trace's name. (Sourced by tests/e2e/run.sh; the
# adversarial run of issue 11 found no defect here: these keep it so.)

# ---- signals from outside ---------------------------------------------------
# killspin runs two threads calling sp_outer -> sp_mid -> sp_leaf; another
# process sends it a terminating signal 0 to 350 ms after it has made its
# first rounds. It must die of
# that signal (status 128 + N), and its trace must be complete (END), read
# without --partial, with every sp_outer call's 8 sp_leaf calls (a call
# interrupted by the signal may be cut short: at most one per thread). A
# background job of a script starts with SIGINT and SIGQUIT ignored: env
# --default-signal gives the program the default actions it would have.
# The final flush at a fatal signal copies the chunk of a thread that is
# still running until its next event parks it: a slot that thread is
# filling meanwhile is read as docs/design.md's "Slots filled late" says
# (atomically, and left out if unfilled), so this runs under TSan too.
OUTSIDE=$T/outside
mkdir -p "$OUTSIDE"
outside_bad=""
n=0
for sig in TERM INT HUP USR1 QUIT ALRM TERM INT; do
	[ -x "$B/killspin" ] || { outside_bad="killspin was not built"; break; }
	n=$((n + 1))
	tr=$OUTSIDE/$n.hookprof
	(cd "$OUTSIDE" && HOOKPROF_OUTPUT=$tr LD_PRELOAD=$LIB exec env --default-signal "$B/killspin" 10000 "$tr.ready" >/dev/null 2>"$OUTSIDE/$n.err") &
	pid=$!
	wait_ready "$tr.ready" $pid || outside_bad="$outside_bad SIG$sig: killspin never said it was under way;"
	sleep "$(printf '0.%03d' $((RANDOM % 350)))"
	kill -s "$sig" $pid 2>/dev/null
	wait $pid
	rc=$?
	want=$((128 + $(kill -l "$sig")))
	"$HP" report --format=csv "$tr" >"$OUTSIDE/$n.csv" 2>"$OUTSIDE/$n.rerr"
	rrc=$?
	if [ $rc != $want ] || [ $rrc != 0 ] || [ -s "$OUTSIDE/$n.err" ] ||
		! csv_to_tsv "$OUTSIDE/$n.csv" >"$OUTSIDE/$n.tsv"; then
		outside_bad="$outside_bad SIG$sig: status $rc (want $want), report $rrc $(brief "$OUTSIDE/$n.rerr") $(brief "$OUTSIDE/$n.err");"
		continue
	fi
	# sp_leaf = 8 * sp_outer, less what the signal cut short (2 threads).
	odd=$(awk -F'\t' '$1 == "sp_outer" { o = $2 } $1 == "sp_leaf" { l = $2 }
		END { d = 8 * o - l; if (o < 1 || d < 0 || d > 16) print "sp_outer " o ", sp_leaf " l }' "$OUTSIDE/$n.tsv")
	[ -z "$odd" ] || outside_bad="$outside_bad SIG$sig: $odd;"
done
check "signals sent from outside at random moments (SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGQUIT, SIGALRM): each run dies of its signal, trace complete, 8 sp_leaf per sp_outer" \
	"$outside_bad" [ -z "$outside_bad" ]

# ---- a symlink planted at the trace's name ---------------------------------
# HOOKPROF_OUTPUT names a symlink to a file the program must not touch (and
# to a missing one it must not create): the trace goes to the next free
# name, the targets are left alone.
PLANT=$T/planted
mkdir -p "$PLANT"
echo "victim" >"$PLANT/victim"
ln -s "$PLANT/victim" "$PLANT/trace.hookprof"
ln -s "$PLANT/made-by-us" "$PLANT/other.hookprof"
for name in trace other; do
	label="a symlink planted at the trace's name ($name.hookprof)"
	(cd "$PLANT" && HOOKPROF_OUTPUT=$PLANT/$name.hookprof LD_PRELOAD=$LIB exec "$B/nested_O0" >"$PLANT/out" 2>"$PLANT/err")
	RC=$?
	check "$label: the program runs as usual" "status $RC, $(brief "$PLANT/out")" [ $RC = 0 -a "$(cat "$PLANT/out")" = "nested done 1" ]
	check "$label: the trace goes to $name.hookprof.1" "files: $(ls "$PLANT" | tr '\n' ' ')" [ -s "$PLANT/$name.hookprof.1" -a ! -L "$PLANT/$name.hookprof.1" ]
	check "$label: its warning names where the trace went" "stderr: $(brief "$PLANT/err")" \
		grep -q "^hookprof: '$PLANT/$name.hookprof' exists; the trace goes to '$PLANT/$name.hookprof.1'$" "$PLANT/err"
done
check "a symlink planted at the trace's name: its target is untouched" "victim: $(brief "$PLANT/victim")" \
	[ "$(cat "$PLANT/victim")" = "victim" ]
check "a symlink planted at the trace's name: a missing target is not created" "files: $(ls "$PLANT" | tr '\n' ' ')" \
	[ ! -e "$PLANT/made-by-us" ]
