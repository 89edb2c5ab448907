# tests/e2e/sections/99-notes.sh - marks (hookprof_mark) and values
# (hookprof_value) in replay and in the Chrome and Perfetto exports (issue
# 7), of tests/e2e/progs/control.c traced linked and preloaded: exactly the
# marks and value samples `hookprof dump` shows, per name, in replay (one
# comment line each, aligned with the calls), in Chrome's JSON (instant
# events; counter events, one track per name) read by python3's json, and
# in Perfetto's protobuf (instant events on the thread's track; a counter
# track per name) decoded by protoc. Sourced by tests/e2e/run.sh.

build notes_linked gcc "${IF[@]}" -O1 -pthread "$SRC/control.c" "${LINK[@]}"
build notes_preload gcc "${IF[@]}" -O1 -pthread -I"$INC" "$SRC/control.c"

# What control.c notes: 4 marks on main, values queue 10 20 60, neg -5 5,
# big once, thread_v 1-4 on each worker.
NOTES_WANT='marks=4 big=1 neg=2 queue=3 thread_v=8'
NOTES_PY=$T/notes.py
cat >"$NOTES_PY" <<'EOF'
# notes.py FORMAT FILE: "marks=N NAME=N..." (values per name, sorted) from
# an export (chrome: its JSON; perfetto: protoc --decode's text), then the
# queue's values and the three step marks in order; or the first problem
# found, exit 1.
import json, sys
from collections import Counter, defaultdict

fmt, path = sys.argv[1:3]
def fail(why):
    print(why)
    sys.exit(1)

marks, values = [], defaultdict(list)
if fmt == "chrome":
    tracks = set()
    for e in json.load(open(path))["traceEvents"]:
        if e["ph"] == "i":
            if e.get("s") != "t" or not {"pid", "tid", "ts"} <= set(e):
                fail("instant event not of a thread: %s" % e)
            marks.append(e["name"])
        elif e["ph"] == "C":
            if list(e["args"]) != [e["name"]]:
                fail("counter event whose args are not {name: value}: %s" % e)
            values[e["name"]].append(e["args"][e["name"]])
            tracks.add((e["pid"], e["name"]))
    if len(tracks) != len(values):
        fail("counter tracks %s, not one per name" % sorted(tracks))
elif fmt == "perfetto":
    # the text of protoc --decode, packet by packet
    packets, cur, stack = [], None, []
    for line in open(path):
        w = line.split(None, 1)
        if not w:
            continue
        if w[0] == "packet" and not stack:
            cur = {}
            packets.append(cur)
        if w[-1].strip() == "{":
            if cur is not None and stack:
                cur[".".join(stack[1:] + [w[0]])] = "{"
            stack.append(w[0])
        elif w[0] == "}":
            stack.pop()
        elif cur is not None:
            cur[".".join(stack[1:] + [w[0].rstrip(":")])] = w[1].strip()
    counters = {}
    for p in packets:
        if "track_descriptor.counter" in p:
            counters[p["track_descriptor.uuid"]] = json.loads(p["track_descriptor.name"])
    for p in packets:
        t = p.get("track_event.type")
        if t == "TYPE_INSTANT":
            if "track_event.track_uuid" in p:
                fail("an instant event off its thread's track: %s" % p)
            marks.append(json.loads(p["track_event.name"]))
        elif t == "TYPE_COUNTER":
            u = p.get("track_event.track_uuid")
            if u not in counters:
                fail("a counter event off the counter tracks: %s" % p)
            values[counters[u]].append(int(p["track_event.counter_value"]))
    if sorted(counters.values()) != sorted(set(counters.values())):
        fail("counter tracks %s, not one per name" % sorted(counters.values()))
else:
    fail("no format " + fmt)
print(" ".join(["marks=%d" % len(marks)] + ["%s=%d" % (n, len(v)) for n, v in sorted(values.items())]))
print("queue " + " ".join(str(v) for v in values["queue"]) + "; big " + " ".join(str(v) for v in values["big"]))
print(" | ".join(m for m in marks if m.startswith("step")))
EOF

# notes_join MARKS: "marks=MARKS NAME=N..." of the lines NAME=N on stdin, sorted.
notes_join() {
	printf 'marks=%s' "$1"
	sort | while read -r l; do printf ' %s' "$l"; done
}

notes_checks() { # LABEL MODE BIN
	local label=$1 mode=$2 bin=$3 got
	run "$mode" "$label" "$bin"
	check_run "$label" "$mode" 0 done
	[ -s "$TRACE" ] || return
	local n=$DIR
	"$HP" dump "$TRACE" >"$n/dump" 2>/dev/null
	got=$(awk '$3 == "value" { v[$4]++ } END { for (k in v) print k "=" v[k] }' "$n/dump" |
		notes_join "$(awk '$3 == "mark"' "$n/dump" | wc -l)")
	check "$label: dump shows the marks and values control.c makes" "got '$got'" [ "$got" = "$NOTES_WANT" ]

	# replay: a comment line each, at its time, indented as a call there
	"$HP" replay "$TRACE" >"$n/replay" 2>"$n/replay.err"
	got=$(awk -F' [|] ' 'NR > 1 { t = $2; sub(/^ */, "", t) }
		t ~ /^\/\* [^ ]+ = -?[0-9]+ \*\/$/ { split(t, w, " "); v[w[2]]++ }
		END { for (k in v) print k "=" v[k] }' "$n/replay" |
		notes_join "$(grep -c '^[^|]* |  */\* mark: ' "$n/replay")")
	check "$label: replay shows every mark and value" "got '$got', stderr $(brief "$n/replay.err")" \
		[ "$got" = "$NOTES_WANT" -a ! -s "$n/replay.err" ]
	check "$label: replay's marks and values in order, where main makes them" "$(grep -F '/* ' "$n/replay" | grep -v '} /\*' | head -8 | tr '\n' '|')" \
		[ "$(grep -F -e '/* mark: step' -e '/* queue = ' "$n/replay" | sed 's/.* | //')" = "$(printf '  /* mark: step %s of three */\n' 1 2 3; printf '  /* queue = %s */\n' 10 20 60)" ]
	check "$label: replay: a long mark is cut at 255 bytes, ending in ..." "$(grep -c 'mark: x' "$n/replay")" \
		grep -q "/\* mark: $(printf 'x%.0s' $(seq 252))\.\.\. \*/$" "$n/replay"
	check "$label: replay: the '|' column is the same on every line" "$(awk '{ print index($0, " | ") }' "$n/replay" | sort -u | tr '\n' ' ')" \
		[ "$(awk '{ print index($0, " | ") }' "$n/replay" | sort -u | wc -l)" = 1 ]
	"$HP" replay --thread=ctl-worker-1 "$TRACE" >"$n/replay.w1" 2>/dev/null
	check "$label: replay --thread: that thread's notes only" "$(brief "$n/replay.w1")" \
		[ "$(grep -c '/\* thread_v = ' "$n/replay.w1"):$(grep -c '/\* mark: \|/\* queue' "$n/replay.w1")" = 4:0 ]
	"$HP" replay --depth=1 "$TRACE" >"$n/replay.d1" 2>/dev/null
	check "$label: replay --depth hides calls, not notes" "$(grep -c '/\* ' "$n/replay.d1")" \
		[ "$(grep -c '/\* mark: \|/\* [a-z_]* = ' "$n/replay.d1")" = 18 ]

	# chrome: instant and counter events
	"$HP" export --format=chrome -o "$n/notes.json" "$TRACE" 2>"$n/chrome.err"
	check "$label: chrome: valid JSON (python3 -m json.tool)" "$(brief "$n/chrome.err")" \
		python3 -m json.tool "$n/notes.json" /dev/null
	python3 "$NOTES_PY" chrome "$n/notes.json" >"$n/chrome.got" 2>&1
	check "$label: chrome: a mark an instant event, a value a counter event, one track per name" \
		"$(brief "$n/chrome.got")" [ "$(head -1 "$n/chrome.got")" = "$NOTES_WANT" ]
	check "$label: chrome: values exact (int64), marks in order" "$(brief "$n/chrome.got")" \
		[ "$(tail -n +2 "$n/chrome.got")" = "$(printf 'queue 10 20 60; big -9000000000000000000\nstep 1 of three | step 2 of three | step 3 of three')" ]

	# perfetto: TYPE_INSTANT on the thread track, TYPE_COUNTER on counter tracks
	"$HP" export --format=perfetto -o "$n/notes.pftrace" "$TRACE" 2>"$n/perfetto.err"
	if ! command -v protoc >/dev/null 2>&1; then
		SKIP=$((SKIP + 1))
		echo "skip - $label: perfetto (protoc not installed: scripts/deps.sh installs it)"
		return
	fi
	protoc --decode=perfetto.protos.Trace -I"$ROOT/symbolize" hp_perfetto.proto <"$n/notes.pftrace" >"$n/perfetto.txt" 2>>"$n/perfetto.err"
	check "$label: perfetto: protoc decodes it" "$(brief "$n/perfetto.err")" [ ! -s "$n/perfetto.err" ]
	python3 "$NOTES_PY" perfetto "$n/perfetto.txt" >"$n/perfetto.got" 2>&1
	check "$label: perfetto: a mark an instant event, a value a counter event, one counter track per name" \
		"$(brief "$n/perfetto.got")" [ "$(head -1 "$n/perfetto.got")" = "$NOTES_WANT" ]
	check "$label: perfetto: values exact (int64), marks in order" "$(brief "$n/perfetto.got")" \
		[ "$(tail -n +2 "$n/perfetto.got")" = "$(printf 'queue 10 20 60; big -9000000000000000000\nstep 1 of three | step 2 of three | step 3 of three')" ]
}

notes_checks notes-linked linked notes_linked
notes_checks notes-preload preload notes_preload
