# tests/e2e/sections/96-pack.sh - a trace read after its program is rebuilt
# or deleted: `hookprof pack` stores the symbol files beside it in
# TRACE.symbols/ (by build-id, or by path without one), and every reader
# uses them; `record --keep-symbols` packs each trace of a process tree.
# Sourced by run.sh.

unset HOOKPROF_DEBUG_PATH DEBUGINFOD_URLS
PK=$T/pack
mkdir -p "$PK"

# pk_build_id FILE: its GNU build-id in hex, empty if none.
pk_build_id() { readelf -n "$1" 2>/dev/null | awk '$1 == "Build" && $2 == "ID:" { print $3; exit }'; }

# nested.c with other code in nest_c: a rebuilt program with a new build-id.
sed 's/i < 200; i++/i < 300; i++/' "$SRC/nested.c" >"$PK/nested_changed.c"

# pk_report_raw LABEL FILE TRACE...: `hookprof report --format=csv` with its
# stderr kept apart (a warning is expected when the names are missing).
pk_report_raw() {
	local label=$1 out=$2
	shift 2
	"$HP" report --format=csv "$@" >"$out" 2>"$out.err"
	check "$label: report works" "status $?; stderr: $(brief "$out.err")" [ -s "$out" ]
}

# ---- pack, then rebuild: the names come from the pack ----------------------

if build pack_prog gcc "${IF[@]}" -O0 "$SRC/nested.c"; then
	label="pack"
	run preload pack pack_prog
	check_run "$label" preload 0 "$NESTED_OUT"
	PTRACE=$TRACE
	id=$(pk_build_id "$B/pack_prog")
	"$HP" pack "$PTRACE" >"$DIR/pack.out" 2>"$DIR/pack.err"
	check "$label: hookprof pack TRACE exits 0, prints nothing on stdout" \
		"status $?; stderr: $(brief "$DIR/pack.err")" [ $? = 0 -a ! -s "$DIR/pack.out" ]
	check "$label: the program stored as TRACE.symbols/.build-id/xx/yyyy.debug" \
		"id $id; files: $(cd "$PTRACE.symbols" 2>/dev/null && find . -type f | tr '\n' ' ')" \
		cmp -s "$B/pack_prog" "$PTRACE.symbols/.build-id/${id:0:2}/${id:2}.debug"
	check "$label: only the module that the events name (not libc, not libhookprof)" \
		"files: $(cd "$PTRACE.symbols" 2>/dev/null && find . -type f | tr '\n' ' ')" \
		[ "$(find "$PTRACE.symbols/.build-id" -type f | wc -l)" = 1 ]
	check "$label: stderr says where, how many modules and KiB" "stderr: $(brief "$DIR/pack.err")" \
		grep -q "^hookprof: symbols of $PTRACE kept in $PTRACE.symbols (1 module, [0-9.]* KiB; " "$DIR/pack.err"
	check "$label: MODULES lists the program and its build-id" "$(brief "$PTRACE.symbols/MODULES")" \
		grep -q "^$B/pack_prog	$id	\.build-id/${id:0:2}/${id:2}\.debug	the traced file$" "$PTRACE.symbols/MODULES"

	build pack_prog gcc "${IF[@]}" -O0 "$PK/nested_changed.c"
	check "$label: the rebuilt program has another build-id" "$id -> $(pk_build_id "$B/pack_prog")" \
		[ -n "$id" -a "$(pk_build_id "$B/pack_prog")" != "$id" ]
	if report "$label: rebuilt program, with the pack" "$PTRACE"; then
		expect_calls "$label: rebuilt program, with the pack" pack_prog main=1 nest_a=3 nest_b=6 nest_c=30
	fi
	# The difference the pack makes: without it, module+0xOFFSET and a warning.
	mv "$PTRACE.symbols" "$PK/moved.symbols"
	pk_report_raw "$label: rebuilt program, without the pack" "$PK/nopack.csv" "$PTRACE"
	check "$label: without the pack, no function is named (4 rows pack_prog+0x...)" \
		"$(brief "$PK/nopack.csv")" \
		[ "$(grep -c '^pack_prog+0x[0-9a-f]*,' "$PK/nopack.csv")" = 4 -a "$(grep -c 'nest_c' "$PK/nopack.csv")" = 0 ]
	check "$label: without the pack, the warning names the rebuilt file" "$(brief "$PK/nopack.csv.err")" \
		grep -q "build-id mismatch: $B/pack_prog was rebuilt" "$PK/nopack.csv.err"
	mv "$PK/moved.symbols" "$PTRACE.symbols"

	# Packing now would take the wrong file: refused, nothing stored.
	"$HP" pack -o "$PK/late" "$PTRACE" >/dev/null 2>"$PK/late.err"
	check "$label: packing after the rebuild says so and stores nothing" \
		"status $?; stderr: $(brief "$PK/late.err"); files: $(find "$PK/late" -type f 2>/dev/null | tr '\n' ' ')" \
		[ $? = 0 -a "$(grep -c "^hookprof: $B/pack_prog: not stored: rebuilt since the trace" "$PK/late.err")" = 1 -a ! -e "$PK/late/.build-id" ]
	# ... but packing its own pack again keeps what it has.
	"$HP" pack "$PTRACE" >/dev/null 2>"$PK/again.err"
	check "$label: packing again after the rebuild keeps the stored file" "stderr: $(brief "$PK/again.err")" \
		grep -q "(1 module," "$PK/again.err"

	rm -f "$B/pack_prog"
	if report "$label: program deleted, with the pack" "$PTRACE"; then
		expect_calls "$label: program deleted, with the pack" pack_prog main=1 nest_a=3 nest_b=6 nest_c=30
	fi
	# Every reader: info, dump and the views (hp_drive) name from the pack too.
	"$HP" dump "$PTRACE" >"$PK/dump" 2>"$PK/dump.err"
	check "$label: dump names nest_c 30 times from the pack" "$(brief "$PK/dump.err")" \
		[ "$(grep -c ' enter nest_c$' "$PK/dump")" = 30 -a ! -s "$PK/dump.err" ]
	"$HP" export --format=folded "$PTRACE" >"$PK/folded" 2>"$PK/folded.err"
	check "$label: export --format=folded names main;nest_a;nest_b;nest_c from the pack" \
		"$(brief "$PK/folded") $(brief "$PK/folded.err")" \
		[ "$(grep -c '^main;nest_a;nest_b;nest_c ' "$PK/folded")" = 1 -a ! -s "$PK/folded.err" ]
	"$HP" info "$PTRACE" >"$PK/info" 2>"$PK/info.err"
	check "$label: info works from the pack, no warning" "$(brief "$PK/info.err")" [ -s "$PK/info" -a ! -s "$PK/info.err" ]

	# A relative trace path, from its directory (the pack's path is made absolute).
	(cd "$(dirname "$PTRACE")" && "$HP" report --format=csv "$(basename "$PTRACE")") >"$PK/rel.csv" 2>"$PK/rel.err"
	check "$label: report of a relative TRACE finds TRACE.symbols" "$(brief "$PK/rel.csv") $(brief "$PK/rel.err")" \
		[ "$(grep -c '^nest_c,30,' "$PK/rel.csv")" = 1 -a ! -s "$PK/rel.err" ]
fi

# ---- a stripped program with its separate debug file (.gnu_debuglink) -------

if build pack_split gcc "${IF[@]}" -O0 "$SRC/nested.c" &&
	objcopy --only-keep-debug "$B/pack_split" "$B/pack_split.debug" &&
	objcopy --strip-all --add-gnu-debuglink="$B/pack_split.debug" "$B/pack_split"; then
	label="pack, stripped program with a debuglink"
	run preload pack-split pack_split
	check_run "$label" preload 0 "$NESTED_OUT"
	id=$(pk_build_id "$B/pack_split")
	"$HP" pack "$TRACE" >/dev/null 2>"$DIR/pack.err"
	check "$label: the separate debug file is what is stored" \
		"stderr: $(brief "$DIR/pack.err")" \
		cmp -s "$B/pack_split.debug" "$TRACE.symbols/.build-id/${id:0:2}/${id:2}.debug"
	check "$label: pack says it stored the separate debug file" "stderr: $(brief "$DIR/pack.err")" \
		grep -q "^hookprof: $B/pack_split: its separate debug file $B/pack_split.debug$" "$DIR/pack.err"
	rm -f "$B/pack_split" "$B/pack_split.debug"
	if report "$label: program and debug file deleted, with the pack" "$TRACE"; then
		expect_calls "$label: deleted, with the pack" pack_split main=1 nest_a=3 nest_b=6 nest_c=30
	fi
	mv "$TRACE.symbols" "$PK/split-moved.symbols"
	pk_report_raw "$label: deleted, without the pack" "$PK/split-nopack.csv" "$TRACE"
	check "$label: without the pack, no names" "$(brief "$PK/split-nopack.csv")" \
		[ "$(grep -c '^pack_split+0x' "$PK/split-nopack.csv")" = 4 ]
else
	nok "pack: stripped program with a debuglink built" "objcopy failed"
fi

# ---- a program without a build-id: kept by path ------------------------------

if build pack_noid gcc "${IF[@]}" -O0 -Wl,--build-id=none "$SRC/nested.c"; then
	label="pack, program without a build-id"
	run preload pack-noid pack_noid
	check_run "$label" preload 0 "$NESTED_OUT"
	"$HP" pack "$TRACE" >/dev/null 2>"$DIR/pack.err"
	check "$label: stored as TRACE.symbols/by-path/PATH" "stderr: $(brief "$DIR/pack.err")" \
		cmp -s "$B/pack_noid" "$TRACE.symbols/by-path$B/pack_noid"
	# Nothing tells a rebuilt file without a build-id: the packed copy wins.
	build pack_noid gcc "${IF[@]}" -O0 -Wl,--build-id=none "$PK/nested_changed.c"
	if report "$label: rebuilt, with the pack" "$TRACE"; then
		expect_calls "$label: rebuilt, with the pack" pack_noid main=1 nest_a=3 nest_b=6 nest_c=30
	fi
fi

# ---- record --keep-symbols on a process tree --------------------------------

if build pack_forktree gcc "${IF[@]}" -O1 -pthread "$SRC/forktree.c"; then
	label="record --keep-symbols -d DIR of a process tree (3 children)"
	RUNS=$((RUNS + 1))
	DIR=$T/run/$RUNS-pack-record
	TREE=$DIR/tree
	mkdir -p "$DIR"
	{ (cd "$DIR" && exec timeout 120 env "$NO_LSAN" "$HP" record --keep-symbols -d "$TREE" -- "$B/pack_forktree" 3 100 >out 2>err); } 2>/dev/null
	RC=$?
	check "$label: exit status 0" "got $RC; stderr: $(brief "$DIR/err")" [ "$RC" = 0 ]
	ntraces=$(ls "$TREE" 2>/dev/null | grep -cE '\.hookprof$')
	npacks=$(ls -d "$TREE"/*.hookprof.symbols 2>/dev/null | wc -l)
	check "$label: 4 traces, each with its TRACE.symbols" "traces $ntraces, packs $npacks: $(ls "$TREE" | tr '\n' ' ')" \
		[ "$ntraces" = 4 -a "$npacks" = 4 ]
	check "$label: stderr: one 'symbols of ... kept' line per trace" "stderr: $(brief "$DIR/err")" \
		[ "$(grep -c '^hookprof: symbols of .* kept in .*\.symbols (1 module, ' "$DIR/err")" = 4 ]
	rm -f "$B/pack_forktree"
	if report "$label: program deleted, report DIR" "$TREE"; then
		expect_calls "$label: program deleted, report DIR" pack_forktree main=4 ft_parent=100 ft_spawn=6 ft_child=300
	fi
fi

# ---- a module path with "..": no copy outside the pack ---------------------
# A module without a build-id is stored by its path; one loaded by a name
# with ".." (more of them than it has directories above) would have been
# copied outside the pack, over whatever was there.
PE2=$PK/escape
mkdir -p "$PE2"
if build pack_noid_plugin.so gcc "${IF[@]}" -O1 -fPIC -shared -Wl,--build-id=none "$SRC/plugin.c"; then
	cp "$B/pack_noid_plugin.so" "$PE2/plugin.so"
	victim=$PE2$PE2/plugin.so # where DIR/by-path/../../..$PE2/plugin.so lands, DIR=$PE2/a/b
	mkdir -p "$(dirname "$victim")"
	echo "not to be overwritten" >"$victim"
	"$HP" record -o "$PE2/dots.hookprof" -- "$B/useplugin" "/../../..$PE2/plugin.so" >/dev/null 2>&1
	"$HP" pack -o "$PE2/a/b" "$PE2/dots.hookprof" >"$PE2/pack.out" 2>&1
	rc=$?
	check "pack of a module loaded as /../../..PATH: exit 0, nothing written outside the pack" \
		"status $rc, $(brief "$PE2/pack.out"), $(brief "$victim")" \
		[ $rc = 0 -a "$(cat "$victim")" = "not to be overwritten" ]
	check "pack of a module loaded as /../../..PATH: says why it is not stored" "$(brief "$PE2/pack.out")" \
		grep -q "plugin.so: not stored: its path has a '.' or '..'" "$PE2/pack.out"
fi
