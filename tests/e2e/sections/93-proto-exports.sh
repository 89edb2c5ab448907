# 93-proto-exports.sh - hookprof export --format=callgrind|pprof|perfetto
# (sourced by tests/e2e/run.sh), each read back by the tool its users use:
# callgrind_annotate, go tool pprof, protoc. Their counts must equal the
# flat report's exactly; their times too, to the nanosecond where the
# format holds what report shows (self), within rounding where a viewer
# adds them up (totals). Threads, recursion (100000 deep, and fib), and a
# longjmp out of 14000 frames.

PX=$T/exports
mkdir -p "$PX"

# have TOOL WHAT: true if TOOL is there; else one skip line (scripts/deps.sh
# installs them all: a CI run never skips).
have() {
	command -v "$1" >/dev/null 2>&1 && return 0
	SKIP=$((SKIP + 1))
	printf 'skip - %s (%s not installed: scripts/deps.sh installs it)\n' "$2" "$1"
	return 1
}

# px_export LABEL FORMAT OUT: hookprof export of the traces PX_TRACES; fails
# on a non-zero exit, anything on stderr, or no output.
px_export() {
	local label=$1 fmt=$2 out=$3
	"$HP" export --format="$fmt" -o "$out" "${PX_TRACES[@]}" 2>"$out.err"
	local rc=$?
	check "$label: export --format=$fmt works" "exit $rc, $(wc -c <"$out" 2>/dev/null) bytes, stderr: $(brief "$out.err")" \
		[ $rc = 0 -a -s "$out" -a ! -s "$out.err" ]
}

# px_compare LABEL WHAT GOT_FILE COLUMN TOLERANCE: GOT_FILE holds lines
# "function value"; each function of the report ($TSV) must be there with
# its COLUMN (2 calls, 3 total, 4 self) within TOLERANCE ns plus 1e-6 of it,
# and nothing else with a non-zero value.
px_compare() {
	local label=$1 what=$2 got=$3 col=$4 tol=$5 bad
	bad=$(awk -v col="$col" -v tol="$tol" '
		NR == FNR { want[$1] = $col; next }
		{ got[$1] += $2 }
		END {
			for (f in want) {
				d = got[f] - want[f]; if (d < 0) d = -d
				if (!(f in got) || d > tol + want[f] * 1e-6)
					printf "%s: %s, report %s; ", f, (f in got) ? got[f] : "none", want[f]
			}
			for (f in got)
				if (!(f in want) && got[f] != 0)
					printf "%s: %s, not in report; ", f, got[f]
		}' FS='\t' "$TSV" FS=' ' "$got")
	check "$label: $what" "$bad" [ -z "$bad" ]
}

# ---- callgrind: callgrind_annotate ----------------------------------------

# The function table of callgrind_annotate's output as "function ns calls".
cg_table() {
	awk '
		/^-+$/ { rule++; next }
		/file:function/ { table = 1; next }
		table && NF == 0 && seen { exit }
		table && NF {
			seen = 1
			gsub(/\([^)]*\)/, "")
			n = split($0, f, " ")
			ns = f[1]; calls = f[2]; fn = f[3]
			gsub(/,/, "", ns); gsub(/,/, "", calls)
			if (ns == ".") ns = 0
			if (calls == ".") calls = 0
			sub(/.*:/, "", fn)
			print fn, ns, calls
		}' "$1"
}

# Callers' calls per function from --tree=caller: "function calls".
cg_callers() {
	awk '
		/^ *[0-9,.]+ .*< / {
			if (match($0, /\(([0-9,]+)x\)/)) {
				n = substr($0, RSTART + 1, RLENGTH - 3); gsub(/,/, "", n); sum += n
			}
			next
		}
		/ \*  / {
			line = $0; sub(/ \[[^]]*\]$/, "", line); n = split(line, f, " ")
			fn = f[n]; sub(/.*:/, "", fn)
			print fn, sum + 0; sum = 0
		}' "$1"
}

# callgrind_annotate, run outside the source tree: run where the sources'
# paths begin (the project's directory, as the e2e tests are), 3.19
# shortens their names and then loses the calls between them.
cg_annotate() { (cd "$PX" && callgrind_annotate "$@"); }

callgrind_checks() { # LABEL ROOT...
	local label="$1 callgrind" out=$PX/$RUNS.callgrind
	shift
	px_export "$label" callgrind "$out" || return
	check "$label: a callgrind file (header, events, fn= and calls= lines, name compression)" "$(brief "$out")" \
		eval 'head -1 "$out" | grep -qx "# callgrind format" && grep -qx "events: ns calls" "$out" && grep -q "^fn=([0-9]*) " "$out" && grep -q "^fn=([0-9]*)$" "$out" && grep -q "^calls=[0-9]* [0-9]*$" "$out"'
	have callgrind_annotate "$label: callgrind_annotate reads it" || return
	cg_annotate --auto=no --threshold=100 "$out" >"$out.self" 2>"$out.self.err"
	check "$label: callgrind_annotate reads it, no warning" "stderr: $(brief "$out.self.err")" \
		[ -s "$out.self" -a ! -s "$out.self.err" ]
	cg_table "$out.self" | awk '{ print $1, $2 }' >"$out.ns"
	cg_table "$out.self" | awk '{ print $1, $3 }' >"$out.calls"
	px_compare "$label" "callgrind_annotate's calls per function equal report's" "$out.calls" 2 0
	px_compare "$label" "callgrind_annotate's self ns per function equal report's" "$out.ns" 4 0
	cg_annotate --auto=no --threshold=100 --inclusive=yes "$out" 2>/dev/null | cg_table /dev/stdin |
		awk '{ print $1, $2 }' >"$out.incl"
	px_compare "$label" "callgrind_annotate --inclusive=yes totals equal report's total_ns (recursion counted once)" "$out.incl" 3 20
	# Every call but a thread's first frame has its caller's calls= line.
	cg_annotate --auto=no --threshold=100 --tree=caller "$out" 2>/dev/null >"$out.tree"
	cg_callers "$out.tree" | awk -v roots=" $* " 'index(roots, " " $1 " ") == 0' >"$out.callers"
	awk -F'\t' -v roots=" $* " 'index(roots, " " $1 " ") == 0' "$TSV" >"$out.tsv"
	local tsv=$TSV
	TSV=$out.tsv
	px_compare "$label" "calls= lines summed per callee (callgrind_annotate --tree=caller) equal report's calls" "$out.callers" 2 0
	TSV=$tsv
}

# ---- pprof: go tool pprof -------------------------------------------------

# "function value" from go tool pprof -top -unit=ns; COLUMN 1 flat, 4 cum.
pp_top() {
	awk -v col="$2" '
		/flat%/ { table = 1; next }
		table && NF >= 6 { v = $col; sub(/ns$/, "", v); print $6, v }' "$1"
}

pprof_checks() { # LABEL
	local label="$1 pprof" out=$PX/$RUNS.pb.gz
	px_export "$label" pprof "$out" || return
	check "$label: gzipped" "$(od -An -tx1 -N2 "$out")" [ "$(od -An -tx1 -N2 "$out" | tr -d ' ')" = 1f8b ]
	have go "$label: go tool pprof reads it" || return
	local pp=(go tool pprof -nodefraction=0 -edgefraction=0 -nodecount=100000)
	HOME=${HOME:-$T} "${pp[@]}" -top -unit=ns "$out" >"$out.top" 2>"$out.top.err"
	check "$label: go tool pprof -top reads it" "exit $?, stderr: $(brief "$out.top.err")" grep -q 'flat%' "$out.top"
	pp_top "$out.top" 1 >"$out.flat"
	pp_top "$out.top" 4 >"$out.cum"
	px_compare "$label" "pprof's flat time per function equals report's self_ns" "$out.flat" 4 0
	px_compare "$label" "pprof's cum time per function equals report's total_ns (recursion counted once)" "$out.cum" 3 20
	HOME=${HOME:-$T} "${pp[@]}" -top -sample_index=calls "$out" 2>/dev/null >"$out.calls.top"
	pp_top "$out.calls.top" 1 >"$out.calls"
	px_compare "$label" "pprof's flat calls per function (-sample_index=calls) equal report's" "$out.calls" 2 0
	# -raw: one sample per distinct path, their calls adding up to every call.
	HOME=${HOME:-$T} go tool pprof -raw "$out" 2>/dev/null >"$out.raw"
	local got want
	got=$(awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && $2 ~ /^[0-9]+:$/ { n++; c += $1 } END { print n + 0, c + 0 }' "$out.raw")
	want=$(awk -F'\t' '{ c += $2 } END { print c + 0 }' "$TSV")
	check "$label: go tool pprof -raw: samples' calls add up to report's ($want)" "samples, calls: $got" \
		[ "${got#* }" = "$want" -a "${got% *}" -gt 0 ]
}

# ---- perfetto: protoc -------------------------------------------------------

# From protoc --decode's text: per function its SLICE_BEGINs ("function n"),
# and one line "# ends N bad B" (B: an END without a BEGIN on its sequence,
# a sequence left open, or one with events and no thread track).
pf_counts() {
	awk '
		$1 == "trusted_packet_sequence_id:" { seq = $2 }
		$1 == "tid:" { track[seq] = 1 }
		$1 == "type:" && $2 == "TYPE_SLICE_BEGIN" { depth[seq]++ }
		$1 == "type:" && $2 == "TYPE_SLICE_END" { ends++; if (--depth[seq] < 0) bad++ }
		$1 == "name_iid:" { begins[$2]++ }
		$1 == "iid:" { iid = $2; interned = 1; next }
		# an interned name comes right after its iid; the name of a mark
		# or of a counter track does not
		$1 == "name:" && interned { v = $0; sub(/^ *name: "/, "", v); sub(/"$/, "", v); name[iid] = v }
		{ interned = 0 }
		END {
			for (i in begins) print (i in name) ? name[i] : "iid" i, begins[i]
			for (s in depth) if (depth[s] || !(s in track)) bad++
			print "# ends", ends + 0, "bad", bad + 0
		}' "$1"
}

perfetto_checks() { # LABEL
	local label="$1 perfetto" out=$PX/$RUNS.pftrace
	px_export "$label" perfetto "$out" || return
	have protoc "$label: protoc decodes it" || return
	protoc --decode_raw <"$out" >/dev/null 2>"$out.raw.err"
	check "$label: protoc --decode_raw decodes it" "exit $?, stderr: $(brief "$out.raw.err")" [ ! -s "$out.raw.err" ]
	protoc --decode=perfetto.protos.Trace -I"$ROOT/symbolize" hp_perfetto.proto <"$out" >"$out.txt" 2>"$out.err"
	check "$label: protoc --decode=perfetto.protos.Trace decodes it" "exit $?, stderr: $(brief "$out.err")" \
		[ -s "$out.txt" -a ! -s "$out.err" ]
	pf_counts "$out.txt" >"$out.counts"
	grep -v '^#' "$out.counts" >"$out.begins"
	px_compare "$label" "SLICE_BEGINs per name equal report's calls" "$out.begins" 2 0
	local calls summary
	calls=$(awk -F'\t' '{ c += $2 } END { print c + 0 }' "$TSV")
	summary=$(grep '^#' "$out.counts")
	check "$label: one SLICE_END per SLICE_BEGIN, nested on each thread's sequence, which has its thread track" \
		"$summary, calls $calls" [ "$summary" = "# ends $calls bad 0" ]
	echo "# $label: $(wc -c <"$out") bytes for $calls calls ($(awk -v b="$(wc -c <"$out")" -v c="$calls" 'BEGIN { printf "%.1f", b / (2 * c) }') bytes per event)"
}

proto_exports() { # LABEL ROOT... (the traces: PX_TRACES, else $TRACE)
	local label=$1
	shift
	[ ${#PX_TRACES[@]} -gt 0 ] || PX_TRACES=("$TRACE")
	report "$label exports" "${PX_TRACES[@]}" || { PX_TRACES=(); return; }
	callgrind_checks "$label" "$@"
	pprof_checks "$label"
	perfetto_checks "$label"
	PX_TRACES=()
}
PX_TRACES=()

run preload exports-threads threads
check_run "exports threads" preload 0 "threads done 1"
proto_exports "threads" main thr_worker
# Two runs merged: one profile of both, each thread its own track.
FIRST_THREADS=$TRACE
run preload exports-threads-again threads
check_run "exports threads, second run" preload 0 "threads done 1"
PX_TRACES=("$FIRST_THREADS" "$TRACE")
proto_exports "two runs of threads merged" main thr_worker
if ! skipped_under thread -- "exports of recursion" "$DEEP_STACK"; then
	run preload exports-recursion recursion
	check_run "exports recursion" preload 0 "recursion 100000 6765"
	proto_exports "recursion" main rec_thread
fi
run preload exports-deepjump deepjump
check_run "exports deepjump" preload 0 "deepjump 8"
proto_exports "deepjump (longjmp)" main
# Mutual recursion: callgrind's edges count no time twice however
# mu_even and mu_odd interleave (their inclusive times are report's totals).
build mutual gcc "${IF[@]}" -O1 "$SRC/mutual.c"
run preload exports-mutual mutual
check_run "exports mutual" preload 0 "mutual 1"
report "mutual recursion" "$TRACE" && expect_calls "mutual recursion" mutual main=1 mu_even=7550 mu_odd=7500 mu_leaf=15050
proto_exports "mutual recursion" main
