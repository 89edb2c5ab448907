# tests/e2e/sections/89-windows.sh - Windows x64 (issue 9): programs built
# with mingw-w64 run under Wine with hookprof's runtime (hookprof.dll, or
# libhookprof.a linked in), and hookprof on Linux names what they did.
# (Sourced by tests/e2e/run.sh.)
#
# What runs: the runtime's Windows side (lib/hp_platform_win.c, lib/win/):
# the writer thread, each thread's exit, the loader's notifications of a
# DLL loaded and unloaded, the flush at exit and on an access violation;
# the MSVC hooks (hooks/hp_penter_win64.S) behind hand-written functions
# hooked as MSVC hooks them (penter_probe; penter_clobber runs them in
# front of clobber.dll, whose C callees clobber every volatile register).
# And the tool on PE modules: DWARF in a
# mingw exe, COFF symbols of a DLL loaded and unloaded at run time, a PDB of
# a DLL built the MSVC way (clang for the MSVC target, lld-link), Windows
# paths through the Wine prefix or the working directory, a rebuilt exe.
#
# Wine is slow to start (a new prefix takes seconds): plain `make check`
# runs this section, the sanitizer variants skip it (nothing of it runs
# their sanitized runtime, and the tool's reading of PE files is covered
# by check_pe).

win_skip() {
	SKIP=$((SKIP + 1))
	printf 'skip - Windows programs under Wine (section 89) (%s)\n' "$1"
}

if skipped_under address thread -- "Windows programs under Wine (section 89)" \
	"they run no sanitized code; plain make check runs them"; then
	:
elif ! command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || ! command -v wine >/dev/null 2>&1; then
	win_skip "x86_64-w64-mingw32-gcc or wine not found: scripts/deps.sh installs them"
else
	W=$T/win
	export WINEPREFIX=$T/wineprefix WINEDEBUG=-all
	HAVE_MSVC=0
	command -v clang >/dev/null 2>&1 && command -v lld-link >/dev/null 2>&1 && HAVE_MSVC=1
	targets="windows"
	[ $HAVE_MSVC = 1 ] && targets="windows $W/msvcmod.dll $W/msvcgh.dll"
	# shellcheck disable=SC2086 # the targets are words
	if make -s -C "$ROOT" $targets BUILD="$BUILD" WIN="$W" >"$T/win-build.log" 2>&1; then
		ok "make windows: hookprof.dll, hookprof.lib, libhookprof.a and the test programs built with mingw-w64"
	else
		nok "make windows" "$(brief "$T/win-build.log")"
	fi
	[ $HAVE_MSVC = 1 ] || echo "# clang or lld-link not found: the PDB checks are not run"
	# The prefix once, before the first program (wine would make it then).
	# No debugger for a crash (Wine's winedbg by default): the process
	# ends with the exception's code, as on a Windows without one.
	wine wineboot --init >"$T/wineboot.log" 2>&1
	wine reg add 'HKLM\Software\Microsoft\Windows NT\CurrentVersion\AeDebug' /v Debugger /t REG_SZ /d '' /f \
		>>"$T/wineboot.log" 2>&1
	wineserver -w 2>/dev/null

	# win_run NAME EXE ARGS...: runs $W/EXE under Wine in a fresh directory,
	# the trace to $DIR/trace.hookprof. Sets DIR, TRACE, RC.
	win_run() {
		local name=$1 exe=$2
		shift 2
		DIR=$T/run/win-$name
		TRACE=$DIR/trace.hookprof
		mkdir -p "$DIR"
		{ (cd "$DIR" && HOOKPROF_OUTPUT=trace.hookprof exec wine "$W/$exe" "$@" >out 2>err); } 2>/dev/null
		RC=$?
	}
	win_checks_run() { # LABEL WANT_STDOUT [WANT_RC]
		check "$1: exit status ${3:-0}" "got $RC; stderr: $(brief "$DIR/err")" [ "$RC" = "${3:-0}" ]
		check "$1: program output" "got '$(brief "$DIR/out")', want '$2'" \
			[ "$(tr -d '\r' <"$DIR/out")" = "$2" ]
		check "$1: trace file written" "files: $(ls "$DIR" | tr '\n' ' ')" [ -s "$TRACE" ]
	}

	# _penter/_pexit: every value survives, and the trace has every call.
	win_run penter penter_probe.exe
	win_checks_run "penter_probe (hand-written MSVC /Gh /GH functions)" "penter ok"
	check "penter_probe: nothing on stderr" "stderr: $(brief "$DIR/err")" [ ! -s "$DIR/err" ]
	"$HP" info "$TRACE" >"$DIR/info" 2>&1
	check "penter_probe: the root stack from a function without unwind data, hooked by _penter" \
		"$(grep -m1 'root:' "$DIR/info")" grep -q '^    root: probe_sum5 (penter_probe\.exe) <- main (penter_probe\.exe) <- ' "$DIR/info"
	if report "penter_probe" "$TRACE"; then
		expect_calls "penter_probe" penter_probe.exe probe_sum5=2 probe_mix=2 probe_half=1 \
			probe_vsum=3 probe_fib=177 probe_skip=1 probe_noexit=1 probe_inner=3
		check_times "penter_probe"
	fi
	# Behind the hooks, a callee that changes every register C may change;
	# it records nothing, and counts (probe_noexit has no _pexit).
	win_run clobber penter_clobber.exe
	check "penter_clobber: exit status 0" "got $RC; stderr: $(brief "$DIR/err")" [ "$RC" = 0 ]
	check "penter_clobber: the hooks keep what their C callee clobbers" "got '$(brief "$DIR/out")'" \
		[ "$(tr -d '\r' <"$DIR/out")" = "penter ok" ]
	check "penter_clobber: 190 enters and 189 exits reached C" "stderr: $(brief "$DIR/err")" \
		[ "$(tr -d '\r' <"$DIR/err")" = "clobber: 190 enters, 189 exits" ]

	# A multi-threaded mingw program, a DLL loaded and unloaded, a PDB.
	args=("$W/winplug.dll")
	want="winprog done 320 30 0 0"
	if [ $HAVE_MSVC = 1 ]; then
		args+=("$W/msvcmod.dll" "$W/msvcgh.dll")
		want="winprog done 320 30 10 55"
	fi
	win_run prog winprog.exe "${args[@]}"
	win_checks_run "winprog" "$want"
	PROG_TRACE=$TRACE
	if report "winprog" "$TRACE"; then
		expect_calls "winprog: DWARF in the exe" winprog.exe main=1 worker=3 w_step=300 w_leaf=600 \
			m_compute=10 s_helper=20 call_plugin=$((1 + 2 * HAVE_MSVC))
		expect_calls "winprog: COFF symbols of a DLL unloaded before the end" winplug.dll plug_run=1 plug_leaf=5
		src=$(field w_leaf winprog.exe 9)
		check "winprog: w_leaf's source line from DWARF" "source '$src'" \
			bash -c '[[ $1 =~ winprog\.c:[0-9]+$ ]]' sh "$src"
		[ $HAVE_MSVC = 1 ] && expect_calls "winprog: a PDB read by llvm-symbolizer" msvcmod.dll msv_run=1 msv_leaf=4
		[ $HAVE_MSVC = 1 ] && expect_calls "winprog: /Gh /GH code linked by lld-link against hookprof.lib" \
			msvcgh.dll probe_fib=177
		check_times "winprog"
	fi
	"$HP" info "$TRACE" >"$DIR/info" 2>&1
	check "winprog: info shows 4 threads, each with its events" "$(brief "$DIR/info")" \
		[ "$(grep -Ec '^  stream [0-9]+ tid [0-9]+ .* [1-9][0-9]* events' "$DIR/info")" = 4 ]
	check "winprog: the workers named by hookprof_thread_name, main by the program" "$(brief "$DIR/info")" \
		all_of [ "$(grep -Ec '^  stream [0-9]+ tid [0-9]+ worker ' "$DIR/info")" = 3 ] -- \
		grep -Eq '^  stream 0 tid [0-9]+ winprog ' "$DIR/info"
	check "winprog: nothing on stderr" "stderr: $(brief "$DIR/err")" [ ! -s "$DIR/err" ]
	# Root stacks (STACK records), unwound with each module's .pdata.
	check "winprog: main's root stack goes through the C runtime's start" "$(grep -m1 'root: main' "$DIR/info")" \
		grep -q '^    root: main (winprog\.exe) <- __tmainCRTStartup (winprog\.exe) <- mainCRTStartup (winprog\.exe) <- ' "$DIR/info"
	check "winprog: each worker's root stack starts at BaseThreadInitThunk" "$(grep -m1 'root: worker' "$DIR/info")" \
		[ "$(grep -c '^    root: worker (winprog\.exe) <- BaseThreadInitThunk (kernel32\.dll) <- ' "$DIR/info")" = 3 ]

	# The runtime linked into the exe (libhookprof.a), no DLL of ours.
	win_run static winprog_static.exe
	win_checks_run "winprog_static (libhookprof.a)" "winprog done 320 0 0 0"
	if report "winprog_static" "$TRACE"; then
		expect_calls "winprog_static" winprog_static.exe main=1 worker=3 w_step=300 w_leaf=600 \
			m_compute=10 s_helper=20
		check_times "winprog_static"
	fi

	# `make windows` builds the runtime with clang when it is there (native
	# TLS); the same with mingw's gcc (emulated TLS), checked as that build.
	if command -v clang >/dev/null 2>&1; then
		WC=$T/win-gcc
		if make -s -C "$ROOT" "$WC/winprog.exe" "$WC/winplug.dll" BUILD="$BUILD" WIN="$WC" \
			WIN_RT_CC=x86_64-w64-mingw32-gcc >"$T/win-gcc-build.log" 2>&1; then
			saved_w=$W
			W=$WC
			win_run gcc winprog.exe "$WC/winplug.dll"
			W=$saved_w
			win_checks_run "winprog, runtime built by mingw's gcc" "winprog done 320 30 0 0"
			if report "winprog, runtime built by mingw's gcc" "$TRACE"; then
				expect_calls "winprog, runtime built by mingw's gcc" winprog.exe main=1 worker=3 w_step=300 \
					w_leaf=600 m_compute=10 s_helper=20 call_plugin=1
				expect_calls "winprog, runtime built by mingw's gcc" winplug.dll plug_run=1 plug_leaf=5
			fi
		else
			nok "make windows WIN_RT_CC=x86_64-w64-mingw32-gcc" "$(brief "$T/win-gcc-build.log")"
		fi
	fi

	# An access violation three instrumented frames deep: the trace is
	# kept, with the crash, its backtrace and the frames never returned.
	win_run crash wincrash.exe
	win_checks_run "wincrash (access violation)" "wincrash start" 5
	if report "wincrash" "$TRACE"; then
		expect_calls "wincrash" wincrash.exe main=1 cr_outer=1 cr_inner=1 cr_work=7
	fi
	"$HP" report "$TRACE" >"$DIR/table" 2>&1
	crash_line='# crash: EXCEPTION_ACCESS_VIOLATION (exception 0xc0000005, address 0x0)'
	check "wincrash: the report says '$crash_line'" "$(grep -m3 'crash' "$DIR/table" | tr '\n' '|')" \
		grep -qxF -e "$crash_line" "$DIR/table"
	got=$(awk '$2 ~ /^#[0-9]+$/ { printf "%s ", $4 }' "$DIR/table")
	check "wincrash: backtrace leaf_av cr_inner cr_outer main" "frames: $got" \
		bash -c '[[ $1 == "leaf_av cr_inner cr_outer main "* ]]' sh "$got"
	open_line='# not returned (instrumented frames open at the crash, outermost first): main > cr_outer > cr_inner'
	check "wincrash: main, cr_outer and cr_inner never returned" "$(grep -m1 'not returned (' "$DIR/table")" \
		grep -qxF -e "$open_line" "$DIR/table"

	# ExitProcess, not exit(): the writer thread is gone before the runtime
	# hears of it; the trace is whole all the same, in both modes.
	for mode in stream ring; do
		HOOKPROF_MODE=$mode win_run "exit-$mode" winexit.exe
		win_checks_run "winexit ($mode mode, ExitProcess)" "winexit 2000 700" 7
		check "winexit ($mode mode): nothing on stderr" "stderr: $(brief "$DIR/err")" [ ! -s "$DIR/err" ]
		if report "winexit ($mode mode)" "$TRACE"; then
			expect_calls "winexit ($mode mode)" winexit.exe main=1 ex_work=2000 ex_worker=1 ex_thread_work=700
		fi
	done

	# The trace names the program Z:\...\winprog.exe: every view that names
	# a program by its base name names it winprog.exe (the report's header
	# and info give the whole path, as of a Linux program).
	win_names() { # LABEL FILE REGEX: a line of FILE matches, none holds a Z:\ path
		check "program named by its base name: $1" "$(grep -ao 'Z:\\[^"]\{0,60\}\|.\{0,30\}winprog\.exe.\{0,30\}' "$2" | head -3 | tr '\n' '|')" \
			all_of grep -aq "$3" "$2" -- bash -c '! grep -aqF "Z:\\" "$1"' sh "$2"
	}
	"$HP" report --per-thread "$PROG_TRACE" 2>&1 | grep '^## ' >"$T/win-per-thread"
	win_names "report --per-thread" "$T/win-per-thread" '^## thread [0-9]* winprog, process [0-9]* winprog\.exe ('
	"$HP" diff "$PROG_TRACE" "$PROG_TRACE" >"$T/win-diff" 2>&1
	win_names "diff" "$T/win-diff" '^# old: .*, 1 run of winprog\.exe$'
	for f in chrome perfetto speedscope callgrind pprof; do
		"$HP" export --format=$f -o "$T/win-export.$f" "$PROG_TRACE" 2>"$T/win-export.$f.err"
	done
	win_names "export chrome" "$T/win-export.chrome" '"process_name","args":{"name":"winprog\.exe"}'
	win_names "export perfetto" "$T/win-export.perfetto" 'winprog\.exe'
	win_names "export speedscope" "$T/win-export.speedscope" '"name":"winprog\.exe pid [0-9]* tid [0-9]* winprog"'
	win_names "export callgrind" "$T/win-export.callgrind" '^cmd: winprog\.exe$'
	gzip -dc "$T/win-export.pprof" >"$T/win-export.pprof.raw" 2>/dev/null
	win_names "export pprof" "$T/win-export.pprof.raw" 'winplug\.dll'
	# No file found: the functions are MODULE+0xOFFSET, of the base name.
	for v in tree graph replay; do
		( cd "$T" && env -u WINEPREFIX HOME=/nonexistent "$HP" $v "$PROG_TRACE" >"$T/win-nofile.$v" 2>/dev/null )
		win_names "$v, no file found" "$T/win-nofile.$v" 'winplug\.dll+0x[0-9a-f]'
	done

	# Without the Wine prefix, the files are found in the working directory.
	( cd "$W" && env -u WINEPREFIX HOME=/nonexistent "$HP" report --format=csv "$PROG_TRACE" >"$T/win-cwd.csv" 2>"$T/win-cwd.err" )
	if csv_to_tsv "$T/win-cwd.csv" >"$T/win-cwd.tsv" && [ ! -s "$T/win-cwd.err" ]; then
		saved_tsv=$TSV
		TSV=$T/win-cwd.tsv
		expect_calls "winprog, no Wine prefix, run from the binaries' directory" winprog.exe w_leaf=600 main=1
		expect_calls "winprog, no Wine prefix, run from the binaries' directory" winplug.dll plug_leaf=5
		TSV=$saved_tsv
	else
		nok "winprog, no Wine prefix: report works" "$(brief "$T/win-cwd.err")"
	fi

	# No llvm-symbolizer: the PDBs' modules are module+0xOFFSET, one
	# warning for each.
	if [ $HAVE_MSVC = 1 ]; then
		HOOKPROF_LLVM_SYMBOLIZER=/nonexistent/llvm-symbolizer "$HP" report --format=csv "$PROG_TRACE" \
			>"$T/win-nosym.csv" 2>"$T/win-nosym.err"
		check "no llvm-symbolizer: exactly two warnings, naming msvcmod.dll, msvcgh.dll and llvm-symbolizer" \
			"stderr: $(brief "$T/win-nosym.err")" \
			all_of [ "$(wc -l <"$T/win-nosym.err")" = 2 ] -- grep -q '^hookprof: warning: .*msvcmod\.dll.*llvm-symbolizer' "$T/win-nosym.err" \
			-- grep -q '^hookprof: warning: .*msvcgh\.dll.*llvm-symbolizer' "$T/win-nosym.err"
		if csv_to_tsv "$T/win-nosym.csv" >"$T/win-nosym.tsv"; then
			check "no llvm-symbolizer: msvcmod.dll's rows are msvcmod.dll+0xOFFSET with calls 1 and 4" \
				"rows: $(grep msvcmod "$T/win-nosym.tsv" | cut -f1,2 | tr '\t\n' '= ')" \
				awk -F'\t' '$8 == "msvcmod.dll" { n++; if ($1 !~ /^msvcmod\.dll\+0x[0-9a-f]+$/) bad = 1; c = c " " $2 }
					END { exit bad || n != 2 || (c != " 1 4" && c != " 4 1") }' "$T/win-nosym.tsv"
		else
			nok "no llvm-symbolizer: report works" "$(brief "$T/win-nosym.tsv")"
		fi
	fi

	# The PDB gone: one warning that names it, and no call to llvm-symbolizer.
	if [ $HAVE_MSVC = 1 ]; then
		mv "$W/msvcmod.pdb" "$W/msvcmod.pdb.away"
		"$HP" report --format=csv "$PROG_TRACE" >"$T/win-nopdb.csv" 2>"$T/win-nopdb.err"
		check "PDB missing: exactly one warning, naming msvcmod.pdb" "stderr: $(brief "$T/win-nopdb.err")" \
			all_of [ "$(wc -l <"$T/win-nopdb.err")" = 1 ] -- grep -q '^hookprof: warning: .*msvcmod\.pdb is neither there nor beside it' "$T/win-nopdb.err"
		mv "$W/msvcmod.pdb.away" "$W/msvcmod.pdb"
	fi

	# The exe rebuilt after the trace: its CodeView GUID changed, so no
	# wrong names and one warning.
	cp "$W/winprog.exe" "$T/winprog.exe.orig"
	if x86_64-w64-mingw32-gcc -O2 -g -DEXTRA -finstrument-functions -Wl,--build-id -I"$ROOT/tests/win" -I"$ROOT/include" \
		-o "$W/winprog.exe" "$ROOT/tests/win/winprog.c" -L"$W" -lhookprof >"$T/win-rebuild.log" 2>&1; then
		"$HP" report --format=csv "$PROG_TRACE" >"$T/win-rebuilt.csv" 2>"$T/win-rebuilt.err"
		check "rebuilt exe: one warning, the build-id mismatch of winprog.exe" "stderr: $(brief "$T/win-rebuilt.err")" \
			all_of [ "$(wc -l <"$T/win-rebuilt.err")" = 1 ] -- grep -q '^hookprof: warning: .*build-id mismatch.*winprog\.exe' "$T/win-rebuilt.err"
		csv_to_tsv "$T/win-rebuilt.csv" >"$T/win-rebuilt.tsv"
		check "rebuilt exe: no w_* names, winprog.exe+0xOFFSET rows" "rows: $(cut -f1,8 "$T/win-rebuilt.tsv" | tr '\t\n' '@ ' | head -c 300)" \
			awk -F'\t' '$8 == "winprog.exe" { n++; if ($1 !~ /^winprog\.exe\+0x[0-9a-f]+$/) bad = 1 } END { exit bad || n == 0 }' "$T/win-rebuilt.tsv"
	else
		nok "rebuild winprog.exe" "$(brief "$T/win-rebuild.log")"
	fi
	cp "$T/winprog.exe.orig" "$W/winprog.exe"

	# Packed, the trace is named with the binaries gone: the exe and the
	# PDB's DLL by their CodeView identity, winplug.dll (none) by path.
	PACKED=$T/win-packed
	mkdir -p "$PACKED/elsewhere"
	cp "$PROG_TRACE" "$PACKED/trace.hookprof"
	"$HP" pack "$PACKED/trace.hookprof" >"$T/win-pack.out" 2>"$T/win-pack.err"
	check "pack: stores winprog.exe, winplug.dll, msvcmod.dll with its PDB and msvcgh.dll with its" "$(brief "$T/win-pack.err")" \
		all_of grep -q "symbols of .* kept in .* ($((2 + 2 * HAVE_MSVC)) modules," "$T/win-pack.err" -- \
		bash -c '[ $1 = 0 ] || grep -q "msvcmod\.dll: the traced file and its PDB" "$2"' sh "$HAVE_MSVC" "$T/win-pack.err"
	mv "$W" "$W.away"
	( cd "$PACKED/elsewhere" && env -u WINEPREFIX HOME=/nonexistent "$HP" report --format=csv ../trace.hookprof \
		>"$T/win-packed.csv" 2>"$T/win-packed.err" )
	if csv_to_tsv "$T/win-packed.csv" >"$T/win-packed.tsv" && [ ! -s "$T/win-packed.err" ]; then
		saved_tsv=$TSV
		TSV=$T/win-packed.tsv
		expect_calls "packed, the binaries gone" winprog.exe w_leaf=600 main=1
		expect_calls "packed, the binaries gone" winplug.dll plug_leaf=5
		[ $HAVE_MSVC = 1 ] && expect_calls "packed, the binaries gone: the PDB from the pack" msvcmod.dll msv_leaf=4
		[ $HAVE_MSVC = 1 ] && expect_calls "packed, the binaries gone: the PDB from the pack" msvcgh.dll probe_fib=177
		TSV=$saved_tsv
	else
		nok "packed, the binaries gone: report works" "$(brief "$T/win-packed.err") $(brief "$T/win-packed.tsv")"
	fi
	# The pack is what names them: without it, module+0xOFFSET.
	mv "$PACKED/trace.hookprof.symbols" "$PACKED/away.symbols"
	( cd "$PACKED/elsewhere" && env -u WINEPREFIX HOME=/nonexistent "$HP" report --format=csv ../trace.hookprof \
		>"$T/win-unpacked.csv" 2>/dev/null )
	check "without the pack, the binaries gone: no names" "$(brief "$T/win-unpacked.csv")" \
		bash -c '! grep -q "w_leaf\|plug_leaf\|msv_leaf" "$1"' sh "$T/win-unpacked.csv"
	mv "$W.away" "$W"
	wineserver -k 2>/dev/null
	# The prefix's server directory, /tmp/wine-XXXXXX/server-DEV-INODE
	# (named after the prefix's device and inode), goes with the prefix.
	srv=$(printf 'server-%x-%x' "$(stat -c %d "$WINEPREFIX")" "$(stat -c %i "$WINEPREFIX")")
	for d in /tmp/wine-*/"$srv"; do
		[ -d "$d" ] && rm -rf "${d%/*}"
	done
	unset WINEPREFIX WINEDEBUG
fi
