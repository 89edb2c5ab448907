# 90-tree-graph.sh - hookprof tree and hookprof graph (sourced by
# tests/e2e/run.sh): exact calls per call path and per caller->callee edge
# on programs traced linked and preloaded; the paths ending in a function,
# and the edges into it, add up to the report's calls; self times add up to
# the report's; recursion (direct and mutual), threads, frames closed by
# longjmp, two traces merged, traces cut by kill -9 read with --partial;
# and each filter of hp_drive.h (--depth, --function, --exclude, --min,
# --thread, --time) changes the tree as it says.

TREE_HEADER='path,calls,total_ns,self_ns,avg_ns,min_ns,max_ns'
GRAPH_HEADER='caller,callee,calls,total_ns,self_ns'
TGD=$T/treegraph
mkdir -p "$TGD"
TG_N=0

# tg_csv KIND HEADER FIELDS OUT LABEL ARGS...: hookprof KIND --format=csv
# ARGS into OUT as tab-separated rows; fails (and says so) on a bad exit
# status, a line without CRLF, a bad header, or a row that is not FIELDS
# fields with numbers after the names. stderr is left in OUT.err.
tg_csv() {
	local kind=$1 header=$2 fields=$3 out=$4 label=$5
	shift 5
	TG_N=$((TG_N + 1))
	local csv=$TGD/$TG_N.csv
	"$HP" "$kind" --format=csv "$@" >"$csv" 2>"$out.err"
	local rc=$?
	: >"$out"
	if [ $rc -ne 0 ]; then
		nok "$label: $kind --format=csv works" "exit status $rc; stderr: $(brief "$out.err")"
		return 1
	fi
	local names=2 # caller, callee
	[ "$kind" = tree ] && names=1
	if ! awk -F, -v header="$header" -v fields="$fields" -v names="$names" '
		!/\r$/ { print "line " NR " does not end in CRLF"; bad = 1; exit 1 }
		{ sub(/\r$/, "") }
		NR == 1 { if ($0 != header) { print "bad header: " $0; bad = 1; exit 1 } next }
		{
			if (NF != fields) { print "row " NR " has " NF " fields: " $0; bad = 1; exit 1 }
			for (k = names + 1; k <= NF; k++)
				if ($k !~ /^[0-9]+$/) { print "row " NR " field " k " not a number: " $0; bad = 1; exit 1 }
			line = $1
			for (k = 2; k <= NF; k++) line = line "\t" $k
			print line
		}
		END { if (!bad && NR < 1) { print "no output"; exit 1 } }' "$csv" >"$out"; then
		nok "$label: $kind --format=csv works" "$(brief "$out")"
		: >"$out"
		return 1
	fi
}
# tree_csv LABEL ARGS...: TREE holds path calls total self avg min max.
tree_csv() {
	TREE=$TGD/tree.$((TG_N + 1))
	tg_csv tree "$TREE_HEADER" 7 "$TREE" "$@"
}
# graph_csv LABEL ARGS...: GRAPH holds caller callee calls total self.
graph_csv() {
	GRAPH=$TGD/graph.$((TG_N + 1))
	tg_csv graph "$GRAPH_HEADER" 5 "$GRAPH" "$@"
}

# paths_are LABEL PATH=CALLS...: the tree has exactly these paths, with these calls.
paths_are() {
	local label=$1 want got
	shift
	want=$(printf '%s\n' "$@" | sort)
	got=$(awk -F'\t' '{ print $1 "=" $2 }' "$TREE" | sort)
	check "$label: exactly the $# expected paths with their calls" \
		"got: $(echo "$got" | tr '\n' ' ')| want: $(echo "$want" | tr '\n' ' ')" [ "$got" = "$want" ]
}
# edges_are LABEL CALLER>CALLEE=CALLS...: the graph has exactly these edges.
edges_are() {
	local label=$1 want got
	shift
	want=$(printf '%s\n' "$@" | sort)
	got=$(awk -F'\t' '{ print $1 ">" $2 "=" $3 }' "$GRAPH" | sort)
	check "$label: exactly the $# expected edges with their calls" \
		"got: $(echo "$got" | tr '\n' ' ')| want: $(echo "$want" | tr '\n' ' ')" [ "$got" = "$want" ]
}

# tree_matches_report LABEL: with TREE and the report's TSV of the same
# traces and filters: the calls of the paths ending in F add up to F's
# calls, for every F either side names; the self times of all paths add
# up to those of all rows (within 1 ns a row of either).
tree_matches_report() {
	local label=$1 res
	res=$(awk -F'\t' '
		FNR == NR { rc[$1] = $2; rs += $4; nr++; next }
		{ n = split($1, p, ";"); tc[p[n]] += $2; ts += $4; nt++ }
		END {
			for (f in rc) if (tc[f] + 0 != rc[f] + 0) why = why " " f ": tree " tc[f] + 0 " report " rc[f]
			for (f in tc) if (!(f in rc) && tc[f] > 0) why = why " " f ": tree " tc[f] " report none"
			d = ts - rs; if (d < 0) d = -d
			if (d > nr + nt) why = why sprintf(" self: tree %.0f report %.0f", ts, rs)
			print why
		}' "$TSV" "$TREE")
	check "$label: tree's calls per function and total self equal report's" "$res" [ -z "$res" ]
}
# graph_matches_report LABEL [F...]: the calls of the edges into each
# function add up to its report calls; for each F named (no recursion
# through it), so do the edges' totals to its total (within 1 ns an edge).
graph_matches_report() {
	local label=$1 res
	shift
	res=$(awk -F'\t' -v nonrec=" $* " '
		FNR == NR { rc[$1] = $2; rt[$1] = $3; next }
		{ ic[$2] += $3; it[$2] += $4; ne[$2]++ }
		END {
			for (f in rc) if (ic[f] + 0 != rc[f] + 0) why = why " " f ": edges in " ic[f] + 0 " report " rc[f]
			for (f in ic) if (!(f in rc) && ic[f] > 0) why = why " " f ": edges in " ic[f] " report none"
			for (f in rc) if (index(nonrec, " " f " ")) {
				d = it[f] - rt[f]; if (d < 0) d = -d
				if (d > ne[f] + 1) why = why sprintf(" %s: total along edges in %.0f report %.0f", f, it[f], rt[f])
			}
			print why
		}' "$TSV" "$GRAPH")
	check "$label: graph's calls into each function${*:+, and totals into $*,} equal report's" "$res" [ -z "$res" ]
}

# The treegraph program's own paths and edges, linked or preloaded.
TG_PATHS=(main=1 'main;pause_ms=1'
	'main;tg_rec=2' 'main;tg_rec;tg_rec=2' 'main;tg_rec;tg_rec;tg_rec=2'
	'main;tg_rec;tg_rec;tg_rec;tg_rec=2' 'main;tg_rec;tg_rec;tg_rec;tg_rec;tg_rec=2'
	'main;tg_even=1' 'main;tg_even;tg_odd=1' 'main;tg_even;tg_odd;tg_even=1'
	'main;tg_even;tg_odd;tg_even;tg_odd=1' 'main;tg_even;tg_odd;tg_even;tg_odd;tg_even=1'
	'main;tg_leaf=3' 'main;tg_mid=1' 'main;tg_mid;tg_leaf=2'
	tg_worker=2 'tg_worker;tg_leaf=8' 'tg_worker;tg_slow=2' 'tg_worker;tg_slow;pause_ms=2')
TG_EDGES=('<root>>main=1' '<root>>tg_worker=2' 'main>pause_ms=1' 'main>tg_rec=2'
	'tg_rec>tg_rec=8' 'main>tg_even=1' 'tg_even>tg_odd=2' 'tg_odd>tg_even=2'
	'main>tg_leaf=3' 'main>tg_mid=1' 'tg_mid>tg_leaf=2' 'tg_worker>tg_leaf=8'
	'tg_worker>tg_slow=2' 'tg_slow>pause_ms=2')

build treegraph gcc "${IF[@]}" -O0 -pthread "$SRC/treegraph.c"
build treegraph_linked gcc "${IF[@]}" -O1 -pthread "$SRC/treegraph.c" "${LINK[@]}"

treegraph_checks() { # LABEL
	local label=$1
	tree_csv "$label" "$TRACE" && paths_are "$label tree" "${TG_PATHS[@]}"
	graph_csv "$label" "$TRACE" && edges_are "$label graph" "${TG_EDGES[@]}"
	report "$label" "$TRACE" || return
	tree_matches_report "$label"
	graph_matches_report "$label" main tg_leaf tg_mid tg_worker tg_slow pause_ms
}

run linked treegraph-linked treegraph_linked
check "treegraph linked: exit status 0" "got $RC; $(brief "$DIR/err")" [ "$RC" = 0 ]
treegraph_checks "treegraph linked"
run preload treegraph treegraph
check "treegraph preload: exit status 0" "got $RC; $(brief "$DIR/err")" [ "$RC" = 0 ]
treegraph_checks "treegraph preload"
TG_TRACE=$TRACE

# ---- the table forms ------------------------------------------------------

"$HP" tree "$TG_TRACE" >"$TGD/tree.txt" 2>&1
check "tree table: a header, main at the left, its callees indented under it, heaviest first" \
	"$(brief "$TGD/tree.txt")" awk '
		NR == 1 { ok1 = $1 == "calls" && $NF == "path" }
		/  main$/ { main = NR }
		/^ +1 .*  \+-pause_ms$/ { pm = NR }
		/  \+-tg_mid$/ { mid = NR }
		/   [| ]  \+-tg_leaf$/ && NR == mid + 1 { mid_leaf = NR }
		END { exit !(ok1 && main == 2 && pm == 3 && mid_leaf > pm) }' "$TGD/tree.txt"
"$HP" graph "$TG_TRACE" >"$TGD/graph.txt" 2>&1
check "graph table: tg_mid's entry: its caller, itself, its callee" "$(brief "$TGD/graph.txt")" \
	awk '
		/<- main$/ { last_caller = NR }
		/[0-9] +[0-9.]+ [mun]?s +[0-9.]+ [mun]?s  tg_mid$/ && $1 == 1 { self = NR }
		/-> tg_leaf$/ && self && NR == self + 1 && $1 == 2 { ok = last_caller == self - 1 }
		END { exit !ok }' "$TGD/graph.txt"

# --sort=calls: each node's callees by calls, ties in the order of first call.
tree_csv "tree --sort=calls --depth=2" --sort=calls --depth=2 "$TG_TRACE"
got=$(cut -f1,2 "$TREE" | tr '\t\n' '= ')
want="tg_worker=2 tg_worker;tg_leaf=8 tg_worker;tg_slow=2 main=1 main;tg_leaf=3 main;tg_rec=2 main;tg_even=1 main;tg_mid=1 main;pause_ms=1 "
check "tree --sort=calls: callees by calls, ties by first call" "got: $got" [ "$got" = "$want" ]
tree_csv "tree --limit=1 --sort=calls" --limit=1 --sort=calls "$TG_TRACE" &&
	paths_are "tree --limit=1 --sort=calls (the first callee of each node)" tg_worker=2 'tg_worker;tg_leaf=8'

# ---- graph FUNC -------------------------------------------------------------

graph_csv "graph tg_leaf" tg_leaf "$TG_TRACE" &&
	edges_are "graph tg_leaf: only the edges of tg_leaf" 'main>tg_leaf=3' 'tg_mid>tg_leaf=2' 'tg_worker>tg_leaf=8'
"$HP" graph tg_nosuch "$TG_TRACE" >"$TGD/nosuch.out" 2>"$TGD/nosuch.err"
rc=$?
check "graph with an unknown FUNC: exit 1, one line on stderr naming it, nothing on stdout" \
	"status $rc; stderr: $(brief "$TGD/nosuch.err"); stdout: $(brief "$TGD/nosuch.out")" \
	[ $rc = 1 ] && [ "$(wc -l <"$TGD/nosuch.err")" = 1 ] && grep -q "tg_nosuch" "$TGD/nosuch.err" && [ ! -s "$TGD/nosuch.out" ]

# ---- filters ------------------------------------------------------------------

tree_csv "tree --depth=2" --depth=2 "$TG_TRACE" &&
	paths_are "tree --depth=2" main=1 'main;pause_ms=1' 'main;tg_rec=2' 'main;tg_even=1' 'main;tg_leaf=3' \
		'main;tg_mid=1' tg_worker=2 'tg_worker;tg_leaf=8' 'tg_worker;tg_slow=2'
tree_csv "tree --function=^tg_mid\$" '--function=^tg_mid$' "$TG_TRACE" &&
	paths_are "tree --function=^tg_mid\$ (only it and its callees)" tg_mid=1 'tg_mid;tg_leaf=2'
tree_csv "tree --function=^tg_(odd|slow)\$" '--function=^tg_(odd|slow)$' "$TG_TRACE" &&
	paths_are "tree --function=^tg_(odd|slow)\$ (from the outermost match)" tg_odd=1 'tg_odd;tg_even=1' \
		'tg_odd;tg_even;tg_odd=1' 'tg_odd;tg_even;tg_odd;tg_even=1' tg_slow=2 'tg_slow;pause_ms=2'
tree_csv "tree --exclude=^tg_(mid|odd)\$" '--exclude=^tg_(mid|odd)$' "$TG_TRACE" &&
	paths_are "tree --exclude=^tg_(mid|odd)\$ (callees hang from the caller)" \
		"${TG_PATHS[@]:0:7}" 'main;tg_even=1' 'main;tg_even;tg_even=1' 'main;tg_even;tg_even;tg_even=1' \
		'main;tg_leaf=5' "${TG_PATHS[@]:15}"
graph_csv "graph --exclude=^tg_mid\$" '--exclude=^tg_mid$' "$TG_TRACE" &&
	edges_are "graph --exclude=^tg_mid\$" '<root>>main=1' '<root>>tg_worker=2' 'main>pause_ms=1' 'main>tg_rec=2' \
		'tg_rec>tg_rec=8' 'main>tg_even=1' 'tg_even>tg_odd=2' 'tg_odd>tg_even=2' 'main>tg_leaf=5' \
		'tg_worker>tg_leaf=8' 'tg_worker>tg_slow=2' 'tg_slow>pause_ms=2'
tid=$("$HP" info "$TG_TRACE" 2>/dev/null | awk '$1 == "stream" && $2 == 1 { print $4 }')
tree_csv "tree --thread=$tid" "--thread=$tid" "$TG_TRACE" &&
	paths_are "tree --thread=TID of a worker" tg_worker=1 'tg_worker;tg_leaf=4' 'tg_worker;tg_slow=1' \
		'tg_worker;tg_slow;pause_ms=1'
# The workers start 300 ms after main's first calls (a nanosleep: at least that).
tree_csv "tree --time=0,0.15" --time=0,0.15 "$TG_TRACE" &&
	paths_are "tree --time=0,0.15 (main's phase)" "${TG_PATHS[@]:0:15}"
tree_csv "tree --time=0.25,100" --time=0.25,100 "$TG_TRACE" &&
	paths_are "tree --time=0.25,100 (the workers' phase)" "${TG_PATHS[@]:15}"
# tg_slow sleeps 50 ms: its calls and callers pass --min=20ms whatever the load.
tree_csv "tree --min=20ms" --min=20ms "$TG_TRACE"
check "tree --min=20ms: every path's min_ns >= 20 ms; tg_slow's paths kept; short ones dropped" "$(brief "$TREE")" \
	awk -F'\t' -v all="${#TG_PATHS[@]}" '
		$6 < 20000000 { short = 1 }
		$1 == "tg_worker;tg_slow;pause_ms" && $2 == 2 { slow = 1 }
		$1 == "main" && $2 == 1 { main = 1 }
		END { exit !(!short && slow && main && NR < all) }' "$TREE"
"$HP" tree --function=tg_nosuch "$TG_TRACE" >"$TGD/none.out" 2>"$TGD/none.err"
rc=$?
check "tree with a filter that matches nothing: exit 0, says so on stderr" \
	"status $rc; $(brief "$TGD/none.err")" [ $rc = 0 ] && grep -q "no call passes the filters" "$TGD/none.err"

# ---- two traces merged --------------------------------------------------------

run preload treegraph-2 treegraph
doubled=()
for p in "${TG_PATHS[@]}"; do doubled+=("${p%=*}=$((${p##*=} * 2))"); done
tree_csv "tree of two traces" "$TG_TRACE" "$TRACE" && paths_are "tree of two traces (calls double)" "${doubled[@]}"
doubled=()
for p in "${TG_EDGES[@]}"; do doubled+=("${p%=*}=$((${p##*=} * 2))"); done
graph_csv "graph of two traces" "$TG_TRACE" "$TRACE" && edges_are "graph of two traces (calls double)" "${doubled[@]}"

# ---- recursion 100000 deep, threads ---------------------------------------------

if ! skipped_under thread -- "tree and graph of the recursion" "$DEEP_STACK"; then
build tg_recursion gcc "${IF[@]}" -O2 -pthread "$SRC/recursion.c"
run preload tg-recursion tg_recursion
graph_csv "recursion" "$TRACE" &&
	edges_are "recursion graph" '<root>>main=1' '<root>>rec_thread=1' 'rec_thread>rec_down=1' \
		'rec_down>rec_down=99999' 'rec_thread>rec_fib=1' 'rec_fib>rec_fib=21890'
if report "recursion" "$TRACE"; then
	graph_matches_report "recursion" rec_thread
	# Along rec_down->rec_down only the outermost activation counts: the
	# second level's call, within the first (rec_thread->rec_down).
	res=$(awk -F'\t' '$1 == "rec_thread" && $2 == "rec_down" { a = $4 } $1 == "rec_down" && $2 == "rec_down" { b = $4 }
		END { print (a > 0 && b > 0 && b <= a) ? "" : "rec_thread>rec_down " a " rec_down>rec_down " b }' "$GRAPH")
	check "recursion graph: time along rec_down->rec_down (outermost per edge) <= along rec_thread->rec_down" "$res" [ -z "$res" ]
	rt=$(field rec_down "" 3)
	res=$(awk -F'\t' -v rt="$rt" '$1 == "rec_thread" && $2 == "rec_down" { d = $4 - rt; if (d < 0) d = -d; if (d <= 1) ok = 1 }
		END { print ok ? "" : "edge " $4 " report " rt }' "$GRAPH")
	check "recursion graph: time along rec_thread->rec_down is rec_down's total in the report" "$res" [ -z "$res" ]
fi
down=()
for i in 1 2 3 4; do
	p=rec_thread
	for _ in $(seq 1 $i); do p="$p;rec_down"; done
	down+=("$p=1")
done
fib=()
p=rec_thread
for i in 1 2 3 4; do p="$p;rec_fib"; fib+=("$p=$((1 << (i - 1)))"); done
tree_csv "recursion --depth=5" --depth=5 "$TRACE" &&
	paths_are "recursion tree --depth=5 (each level a path)" main=1 rec_thread=1 "${down[@]}" "${fib[@]}"
fi

build tg_threads gcc "${IF[@]}" -O1 -pthread "$SRC/threads.c" "${LINK[@]}"
run linked tg-threads tg_threads
tree_csv "threads" "$TRACE" && paths_are "threads tree (8 threads merged)" main=1 thr_worker=8 'thr_worker;thr_work=8000'
report "threads" "$TRACE" && tree_matches_report "threads"
tid=$("$HP" info "$TRACE" 2>/dev/null | awk '$1 == "stream" && $2 == 3 { print $4 }')
tree_csv "threads --thread=$tid" "--thread=$tid" "$TRACE" &&
	paths_are "threads tree --thread=TID" thr_worker=1 'thr_worker;thr_work=1000'

# ---- frames closed by longjmp -------------------------------------------------------

build tg_jump gcc "${IF[@]}" -O1 "$SRC/jump.c"
run preload tg-jump tg_jump
tree_csv "jump" "$TRACE" &&
	paths_are "jump tree (jmp_mid, jmp_inner closed by the longjmp)" main=1 'main;jmp_outer=3' \
		'main;jmp_outer;jmp_mid=3' 'main;jmp_outer;jmp_mid;jmp_inner=3' 'main;jmp_after=1'
report "jump" "$TRACE" && tree_matches_report "jump"
build tg_deepjump gcc "${IF[@]}" -O1 "$SRC/deepjump.c" "${LINK[@]}"
run linked tg-deepjump tg_deepjump
tree_csv "deepjump --depth=4" --depth=4 "$TRACE" &&
	paths_are "deepjump tree --depth=4 (14000 frames closed by each longjmp)" main=1 'main;dj_run=8' \
		'main;dj_run;dj_down=8' 'main;dj_run;dj_down;dj_down=8' 'main;dj_after=40000'
graph_csv "deepjump" "$TRACE" &&
	edges_are "deepjump graph" '<root>>main=1' 'main>dj_run=8' 'dj_run>dj_down=8' 'dj_down>dj_down=111992' \
		'main>dj_after=40000'
report "deepjump" "$TRACE" && graph_matches_report "deepjump" dj_run dj_after main

# ---- traces cut short: kill -9, and a file cut in half, read with --partial -------------

build tg_killspin gcc "${IF[@]}" -O1 -pthread "$SRC/killspin.c"
KTR=$TGD/killed.hookprof
if [ -x "$B/tg_killspin" ]; then
	(cd "$TGD" && HOOKPROF_OUTPUT=$KTR LD_PRELOAD=$LIB exec "$B/tg_killspin" 10000 "$KTR.ready" >/dev/null 2>&1) &
	pid=$!
	wait_ready "$KTR.ready" $pid
	sleep 0.3
	kill -KILL $pid 2>/dev/null
	wait $pid 2>/dev/null
	head -c $(($(wc -c <"$KTR") / 2)) "$KTR" >"$TGD/half.hookprof"
	for tr in "$KTR" "$TGD/half.hookprof"; do
		what="kill -9"
		[ "$tr" = "$KTR" ] || what="cut in half"
		"$HP" report --partial --format=csv "$tr" >"$TGD/partial.csv" 2>/dev/null
		if csv_to_tsv "$TGD/partial.csv" >"$TGD/partial.tsv" && grep -q '^sp_leaf	' "$TGD/partial.tsv"; then
			TSV=$TGD/partial.tsv
			tree_csv "tree --partial ($what)" --partial "$tr" && tree_matches_report "tree --partial ($what)"
			graph_csv "graph --partial ($what)" --partial "$tr" && graph_matches_report "graph --partial ($what)"
			"$HP" tree "$tr" >/dev/null 2>"$TGD/nopartial.err"
			rc=$?
			check "tree without --partial ($what): exit 1 with one line" "status $rc; $(brief "$TGD/nopartial.err")" \
				[ $rc = 1 ] && [ "$(wc -l <"$TGD/nopartial.err")" = 1 ]
		else
			nok "partial trace ($what): report --partial reads it" "$(brief "$TGD/partial.csv")"
		fi
	done
else
	nok "tg_killspin built" "no binary"
fi
