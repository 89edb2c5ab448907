# 50-names.sh - naming functions right (sourced by tests/e2e/run.sh):
# a plugin unloaded and another loaded at its address (issue 11, 2), and two
# static functions of one name in different files (issue 11, 7).

# ---- an address reused after dlclose names the function of its moment ----

NB=$B/names
mkdir -p "$NB"
build names/liba.so gcc "${IF[@]}" -O1 -fPIC -shared "$SRC/names_liba.c"
build names/libb.so gcc "${IF[@]}" -O1 -fPIC -shared "$SRC/names_libb.c"
build names_reuse gcc "${IF[@]}" -O1 "$SRC/names_reuse.c" -ldl
build names_reuse_linked gcc "${IF[@]}" -O1 "$SRC/names_reuse.c" -ldl "${LINK[@]}"

# names_dump_count FUNCTION: enter lines of FUNCTION in hookprof dump $TRACE.
names_dump_count() {
	"$HP" dump "$TRACE" 2>/dev/null | awk -v f="$1" '
		{ name = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", name) }
		$3 == "enter" && name == f { n++ }
		END { print n + 0 }'
}

# names_expect_dump LABEL FUNC=N ...: dump enters FUNC exactly N times.
names_expect_dump() {
	local label=$1 spec f n got
	shift
	for spec in "$@"; do
		f=${spec%=*}
		n=${spec##*=}
		got=$(names_dump_count "$f")
		check "$label: dump enters '$f' $n times" "got $got" [ "$got" = "$n" ]
	done
}

names_reuse_checks() { # LABEL BIN
	local label=$1 bin=$2
	report "$label" "$TRACE" || return
	expect_calls "$label" liba.so alpha_two=11
	expect_calls "$label" libb.so beta_two=13 beta_three=13
	expect_calls "$label" "$bin" call_n=3
	check "$label: no alpha_one or alpha_three (libb's functions at their addresses)" \
		"$(cut -f1,2 "$TSV" | tr '\t\n' '= ')" \
		[ -z "$(field alpha_one "" 2)$(field alpha_three "" 2)$(field beta_one "" 2)" ]
	names_expect_dump "$label" alpha_two=11 beta_two=13 beta_three=13 alpha_three=0
}

for mode in linked preload; do
	bin=names_reuse
	[ $mode = linked ] && bin=names_reuse_linked
	run $mode names-reuse-$mode $bin "$NB" once
	check_run "dlclose, another plugin at its address, $mode" $mode 0 "names_reuse done"
	names_reuse_checks "dlclose, another plugin at its address, $mode" $bin
done

# Issue 11's stress case: 1000 rounds of dlopen/dlclose, two plugins in turn.
run preload names-reuse-1000 names_reuse "$NB" 1000
check_run "1000 dlopen/dlclose rounds, two plugins at one address" preload 0 "names_reuse done"
if report "1000 dlopen/dlclose rounds" "$TRACE"; then
	expect_calls "1000 dlopen/dlclose rounds" liba.so alpha_two=500
	expect_calls "1000 dlopen/dlclose rounds" libb.so beta_two=500 beta_three=1000
	expect_calls "1000 dlopen/dlclose rounds" names_reuse call_n=1500
	check "1000 dlopen/dlclose rounds: no other plugin function" "$(cut -f1,2 "$TSV" | tr '\t\n' '= ')" \
		[ -z "$(field alpha_one "" 2)$(field alpha_three "" 2)$(field beta_one "" 2)" ]
fi
"$HP" info "$TRACE" >"$DIR/info" 2>&1
check "1000 dlopen/dlclose rounds: info shows the plugins loaded again and again at one address" "$(grep 'lib[ab].so' "$DIR/info" | tr '\n' '|')" \
	[ "$(grep -c '/lib[ab]\.so build-id [0-9a-f]* (loaded [0-9]* times)$' "$DIR/info")" -ge 2 ]

# ---- two static functions of one name in two files ------------------------

build names_static gcc "${IF[@]}" -O1 "$SRC/names_static.c" "$SRC/names_static_a.c" "$SRC/names_static_b.c"
HA='helper (names_static_a.c)'
HB='helper (names_static_b.c)'
run preload names-static-1 names_static
check_run "two static helpers" preload 0 "names_static done"
TRACE1=$TRACE
if report "two static helpers" "$TRACE"; then
	expect_calls "two static helpers" names_static "$HA=10" "$HB=5000"
	check "two static helpers: no row named just 'helper'" "$(cut -f1,2 "$TSV" | tr '\t\n' '= ')" \
		[ -z "$(field helper "" 2)" ]
fi
names_expect_dump "two static helpers" "$HA=10" "$HB=5000"
"$HP" report "$TRACE" >"$DIR/table" 2>&1
check "two static helpers: the table shows both" "$(brief "$DIR/table")" \
	grep -q "^ *10 .*  $HA \[names_static\]\$" "$DIR/table"
check "two static helpers: the table shows both (b)" "$(brief "$DIR/table")" \
	grep -q "^ *5000 .*  $HB \[names_static\]\$" "$DIR/table"
# A second run of the PIE loads elsewhere: the same functions still merge.
run preload names-static-2 names_static
if report "two static helpers, two runs merged" "$TRACE1" "$TRACE"; then
	expect_calls "two static helpers, two runs merged" names_static "$HA=20" "$HB=10000" main=2
fi
