# tests/e2e/sections/92-json-exports.sh - `hookprof export --format=chrome`
# and `--format=speedscope`, read back as their viewers read them: python3's
# json parses each file, then the calls per function are checked against
# `hookprof report --format=csv` (exactly), the nesting per thread (Chrome:
# every event within its parent's interval; speedscope: O/C balanced, each
# C closing the innermost open frame, times never going back), the names
# of processes and threads, and traces merged. Sourced by tests/e2e/run.sh;
# uses threads and recursion (built there) and deepjump (20-reader.sh).

build jsonnames g++ "${IF[@]}" -O1 "$SRC/jsonnames.cpp"

JSON_CHECK=$T/json_check.py
cat >"$JSON_CHECK" <<'EOF'
# json_check.py FORMAT FILE CSV PROCESSES THREADS: checks an export (FORMAT
# chrome or speedscope) against report's CSV; prints what it found, or the
# first problem and exits 1.
import csv, json, re, sys
from collections import Counter, defaultdict
from decimal import Decimal

fmt, path, csv_path, want_procs, want_threads = sys.argv[1:6]
want_procs, want_threads = int(want_procs), int(want_threads)

def fail(why):
    print(why)
    sys.exit(1)

def report_calls():
    """Calls per name: two functions of one name (main of two programs) are
    two rows of report, told apart by their module column."""
    want = Counter()
    with open(csv_path, newline="") as f:
        for r in csv.DictReader(f):
            want[r["function"]] += int(r["calls"])
    return want

def compare(counts, what):
    want = report_calls()
    # An export that names functions when it is done labels those of one
    # name by their file: "main (threads.c)".
    named = Counter()
    for name, n in counts.items():
        m = re.match(r"^(.*) \([^()]*\)$", name)
        named[m.group(1) if name not in want and m and m.group(1) in want else name] += n
    counts = named
    for name, n in sorted(want.items()):
        if counts.get(name, 0) != n:
            fail("%s: %d %s events, report says %d calls" % (name, counts.get(name, 0), what, n))
    extra = set(counts) - set(want)
    if extra:
        fail("%s events of functions report does not have: %s" % (what, sorted(extra)[:5]))
    return sum(want.values())

def ns(us):  # a Decimal of microseconds with 3 decimals, as integer ns
    return int(us * 1000)

def laminar(intervals, where):
    """Every two intervals of a thread are disjoint or one holds the other."""
    intervals.sort(key=lambda iv: (iv[0], -iv[1]))
    stack = []
    for start, end, name in intervals:
        if end < start:
            fail("%s: %s ends before it starts" % (where, name))
        while stack and stack[-1][1] <= start and not (stack[-1][0] == start == end):
            stack.pop()
        if stack and end > stack[-1][1]:
            fail("%s: %s [%d, %d] overlaps its parent %s [%d, %d]" % (where, name, start, end, *stack[-1][2:], stack[-1][0], stack[-1][1]))
        stack.append((start, end, name))

def chrome():
    try:
        d = json.load(open(path), parse_float=Decimal)
    except ValueError as e:
        fail("not valid JSON: %s" % e)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    counts = Counter()
    per_thread = defaultdict(list)
    begun = defaultdict(list)
    pnames, tnames = {}, {}
    for e in ev:
        ph = e.get("ph")
        key = (e.get("pid"), e.get("tid"))
        if ph == "X":
            for k in ("pid", "tid", "ts", "dur", "name"):
                if k not in e:
                    fail("X event without %s: %s" % (k, e))
            counts[e["name"]] += 1
            per_thread[key].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]))
        elif ph == "B":
            begun[key].append(e)
        elif ph == "E":
            if not begun[key]:
                fail("E event without its B: %s" % e)
            b = begun[key].pop()
            per_thread[key].append((ns(b["ts"]), ns(e["ts"]), b["name"] + " [end lost]"))
        elif ph in ("i", "C"):
            # marks and values (99-notes checks them): of a thread, timed, named
            for k in ("pid", "tid", "ts", "name"):
                if k not in e:
                    fail("%s event without %s: %s" % (ph, k, e))
        elif ph == "M":
            if e["name"] == "process_name":
                pnames[e["pid"]] = e["args"]["name"]
            elif e["name"] == "thread_name":
                tnames[key] = e["args"]["name"]
        else:
            fail("unexpected event: %s" % e)
    for key, left in begun.items():
        if left:
            fail("B events without their E in %s" % (key,))
    for key, ivs in per_thread.items():
        laminar(ivs, "pid %s tid %s" % key)
        if not tnames.get(key):
            fail("no thread_name for pid %s tid %s" % key)
        if not pnames.get(key[0]):
            fail("no process_name for pid %s" % key[0])
    calls = compare(counts, "X")
    procs = {k[0] for k in per_thread}
    if len(procs) != want_procs or len(per_thread) != want_threads:
        fail("%d processes and %d threads, want %d and %d" % (len(procs), len(per_thread), want_procs, want_threads))
    print("%d X events = report's calls, nested, in %d processes and %d threads, all named" % (calls, len(procs), len(per_thread)))

def speedscope():
    try:
        d = json.load(open(path))
    except ValueError as e:
        fail("not valid JSON: %s" % e)
    if d.get("$schema") != "https://www.speedscope.app/file-format-schema.json":
        fail("no speedscope $schema")
    frames = d["shared"]["frames"]
    if not all(isinstance(f.get("name"), str) and f["name"] for f in frames):
        fail("a frame without a name")
    counts = Counter()
    procs = set()
    for p in d["profiles"]:
        where = p.get("name", "?")
        m = re.match(r"^\S+ pid (\d+) tid (\d+)( .+)?$", where)
        if not m:
            fail("profile name '%s' is not 'PROGRAM pid N tid M [name]'" % where)
        procs.add(m.group(1))
        if p["type"] != "evented" or p["unit"] != "nanoseconds":
            fail("%s: type %s unit %s" % (where, p["type"], p["unit"]))
        stack, last = [], p["startValue"]
        for e in p["events"]:
            fr, at = e["frame"], e["at"]
            if not 0 <= fr < len(frames):
                fail("%s: frame %d not in the frames table (%d)" % (where, fr, len(frames)))
            if at < last or at > p["endValue"]:
                fail("%s: event at %s after %s, or past endValue %s" % (where, at, last, p["endValue"]))
            last = at
            if e["type"] == "O":
                stack.append(fr)
                counts[frames[fr]["name"]] += 1
            elif e["type"] == "C":
                if not stack or stack[-1] != fr:
                    fail("%s: C of frame %d (%s) closes %s" % (where, fr, frames[fr]["name"], stack[-1:] or "nothing"))
                stack.pop()
            else:
                fail("%s: event type %s" % (where, e["type"]))
        if stack:
            fail("%s: %d frames never closed" % (where, len(stack)))
    calls = compare({k: v for k, v in counts.items() if not k.endswith(" [end lost]")}, "O")
    if len(procs) != want_procs or len(d["profiles"]) != want_threads:
        fail("%d processes and %d profiles, want %d and %d" % (len(procs), len(d["profiles"]), want_procs, want_threads))
    print("%d O events = report's calls, balanced, in %d profiles of %d processes" % (calls, len(d["profiles"]), len(procs)))

chrome() if fmt == "chrome" else speedscope()
EOF

# json_export LABEL FORMAT PROCESSES THREADS TRACE...: exports the traces,
# checks the file with json_check.py against report's CSV of the same traces.
JSON_N=0
json_export() {
	local label=$1 fmt=$2 procs=$3 threads=$4 out got
	shift 4
	JSON_N=$((JSON_N + 1))
	out=$T/json/$JSON_N.$fmt.json
	mkdir -p "$T/json"
	if ! "$HP" export --format="$fmt" -o "$out" "$@" 2>"$out.err"; then
		nok "$label: export --format=$fmt" "status $?: $(brief "$out.err")"
		return 1
	fi
	"$HP" report --format=csv "$@" >"$out.csv" 2>/dev/null
	if got=$(python3 "$JSON_CHECK" "$fmt" "$out" "$out.csv" "$procs" "$threads" 2>&1); then
		ok "$label: $fmt: $got"
	else
		nok "$label: $fmt export read back as its viewers read it" "$got"
	fi
}

if ! command -v python3 >/dev/null 2>&1; then
	nok "json exports: python3 is there to read them" "scripts/deps.sh installs it"
else
	run preload json-threads threads
	check_run "json threads" preload 0 "threads done 1"
	JSON_THREADS=$TRACE
	json_export "json threads (9 threads)" chrome 1 9 "$JSON_THREADS"
	json_export "json threads (9 threads)" speedscope 1 9 "$JSON_THREADS"

	if ! skipped_under thread -- "json recursion" "$DEEP_STACK"; then
		run preload json-recursion recursion
		check_run "json recursion" preload 0 "recursion 100000 6765"
		json_export "json recursion (100000 deep)" chrome 1 2 "$TRACE"
		json_export "json recursion (100000 deep)" speedscope 1 2 "$TRACE"
	fi

	run preload json-deepjump deepjump
	check_run "json deepjump" preload 0 "deepjump 8"
	JSON_DEEPJUMP=$TRACE
	json_export "json deepjump (longjmp out of 14000 frames)" chrome 1 1 "$JSON_DEEPJUMP"
	json_export "json deepjump (longjmp out of 14000 frames)" speedscope 1 1 "$JSON_DEEPJUMP"

	run preload json-names jsonnames
	check_run "json names" preload 0 "jsonnames 63002"
	json_export "json names with quotes (operator\"\" _km)" chrome 1 1 "$TRACE"
	json_export "json names with quotes (operator\"\" _km)" speedscope 1 1 "$TRACE"

	# Two programs, and one trace twice: each its own process.
	json_export "json merged threads+deepjump" chrome 2 10 "$JSON_THREADS" "$JSON_DEEPJUMP"
	json_export "json merged threads+deepjump" speedscope 2 10 "$JSON_THREADS" "$JSON_DEEPJUMP"
	json_export "json deepjump trace read twice" chrome 2 2 "$JSON_DEEPJUMP" "$JSON_DEEPJUMP"
fi
