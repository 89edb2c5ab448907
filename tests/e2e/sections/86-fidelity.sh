# tests/e2e/sections/86-fidelity.sh - times less hookprof's own (issue 10):
# the hooks' cost measured in the run and taken out of every call, the
# buffer switches taken out, --raw as measured; a split set by
# construction comes out closer to the truth. Checks are inequalities that
# hold by construction, not timings. (Sourced by tests/e2e/run.sh.)

build fidelity gcc "${IF[@]}" -O1 "$SRC/fidelity.c"
build fidelity_linked gcc "${IF[@]}" -O1 "$SRC/fidelity.c" "${LINK[@]}"

# fid_le A B: A <= B, both numbers (ns, maybe with decimals).
fid_le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a + 0 <= b + 0) }'; }
fid_lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a + 0 < b + 0) }'; }
# fid_closer C L RC RL: the ratio C/L is closer to 1 than RC/RL (in log).
fid_closer() {
	awk -v c="$1" -v l="$2" -v rc="$3" -v rl="$4" 'function d(x) { x = log(x); return x < 0 ? -x : x }
		BEGIN { exit !(c > 0 && l > 0 && rc > 0 && rl > 0 && d(c / l) < d(rc / rl)) }'
}

fidelity_checks() { # LABEL MODE BIN
	local label=$1 mode=$2 bin=$3 f
	run "$mode" "$label" "$bin" 300000
	check_run "$label" "$mode" 0 "fidelity 300000"
	"$HP" info "$TRACE" >"$DIR/info" 2>&1
	check "$label: info: the hooks' cost measured at start and end, taken out" "$(grep hooks: "$DIR/info")" \
		grep -Eq '^hooks: +start [0-9.]+ ns per call .*; end [0-9.]+ ns per call .*taken out' "$DIR/info"
	"$HP" report "$TRACE" >"$DIR/table" 2>&1
	check "$label: report's header says what was taken out" "$(brief "$DIR/table")" \
		grep -Eq "^# times less hookprof's own: [0-9.]+ ns per call" "$DIR/table"
	check "$label: report's header gives hookprof's share of the time measured" "$(brief "$DIR/table")" \
		grep -Eq "^# hookprof's share of the time measured: ([0-9]|[1-9][0-9]|100)%, taken out" "$DIR/table"
	check "$label: report's header gives the clock's step" "$(brief "$DIR/table")" \
		grep -Eq "^# the clock's step: [0-9.]+ ns" "$DIR/table"
	"$HP" report --raw "$TRACE" >"$DIR/raw-table" 2>&1
	check "$label: --raw: no such line" "$(brief "$DIR/raw-table")" \
		bash -c "! grep -Eq 'times less|share of the time' '$DIR/raw-table'"
	report "$label --raw" --raw "$TRACE" || return
	cp "$TSV" "$DIR/raw.tsv"
	report "$label" "$TRACE" || return
	expect_calls "$label" "" main=1 by_calls=1 leaf=300000 by_loop=1
	check_times "$label"
	local bad=
	for f in main by_calls leaf by_loop; do
		local tot self rtot rself
		tot=$(field "$f" "" 3) self=$(field "$f" "" 4)
		rtot=$(awk -F'\t' -v f="$f" '$1 == f { print $3 }' "$DIR/raw.tsv")
		rself=$(awk -F'\t' -v f="$f" '$1 == f { print $4 }' "$DIR/raw.tsv")
		fid_le "$tot" "$rtot" && fid_le "$self" "$rself" || bad="$bad $f($tot/$rtot $self/$rself)"
	done
	check "$label: no time grows: total and self at most as measured" "$bad" [ -z "$bad" ]
	check "$label: leaf's self time shrinks (its hooks)" \
		"$(field leaf "" 4) vs $(awk -F'\t' '$1 == "leaf" { print $4 }' "$DIR/raw.tsv")" \
		fid_lt "$(field leaf "" 4)" "$(awk -F'\t' '$1 == "leaf" { print $4 }' "$DIR/raw.tsv")"
	check "$label: by_calls and by_loop (the same work) come closer than measured" \
		"by_calls $(field by_calls "" 3) by_loop $(field by_loop "" 3); raw $(awk -F'\t' '$1 == "by_calls" || $1 == "by_loop" { printf "%s ", $3 }' "$DIR/raw.tsv")" \
		fid_closer "$(field by_calls "" 3)" "$(field by_loop "" 3)" \
		"$(awk -F'\t' '$1 == "by_calls" { print $3 }' "$DIR/raw.tsv")" \
		"$(awk -F'\t' '$1 == "by_loop" { print $3 }' "$DIR/raw.tsv")"
	# every view gets the same: tree's root total is report's main total
	"$HP" tree --format=csv "$TRACE" >"$DIR/tree.csv" 2>"$DIR/tree.err"
	check "$label: tree's times are compensated as report's (main's total)" "$(brief "$DIR/tree.csv")" \
		grep -q "$(field main "" 3 | cut -d. -f1)" "$DIR/tree.csv"
}

fidelity_checks fidelity-preload preload fidelity
fidelity_checks fidelity-linked linked fidelity_linked

# The monotonic clock: nothing measured, times as measured, and said so.
HOOKPROF_CLOCK=monotonic run preload fidelity-monotonic fidelity 1000
check_run fidelity-monotonic preload 0 "fidelity 1000"
"$HP" info "$TRACE" >"$DIR/info" 2>&1
check "fidelity-monotonic: info says the hooks' cost was not measured" "$(grep hooks: "$DIR/info")" \
	grep -q '^hooks: .*not measured' "$DIR/info"
"$HP" report "$TRACE" >"$DIR/table" 2>&1
check "fidelity-monotonic: report's header takes out no hook cost" "$(brief "$DIR/table")" \
	bash -c "! grep -q 'ns per call' '$DIR/table'"
