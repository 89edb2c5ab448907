# tests/e2e/sections/98-static-names.sh - two static functions named
# helper in two files (issue 11, defect 7) are two names in every view and
# export, with their own calls (10 and 5000), as in `hookprof report`: the
# views that write names as the calls come (replay, chrome, perfetto) know
# the labels before the first call. Sourced by tests/e2e/run.sh.

build static_names gcc "${IF[@]}" -O1 "$SRC/names_static.c" "$SRC/names_static_a.c" "$SRC/names_static_b.c"
SN_WANT='helper (names_static_a.c)=10 helper (names_static_b.c)=5000 '
SN_COUNT=$T/static_names.py
cat >"$SN_COUNT" <<'EOF'
# static_names.py FORMAT FILE: "NAME=CALLS " per function whose name begins
# with "helper", sorted, on one line, from an export (perfetto: protoc's text).
import json, re, sys
from collections import Counter

fmt, path = sys.argv[1:3]
calls = Counter()
if fmt == "chrome":
    for e in json.load(open(path))["traceEvents"]:
        if e.get("ph") == "X":
            calls[e["name"]] += 1
elif fmt == "speedscope":
    d = json.load(open(path))
    frames = d["shared"]["frames"]
    for p in d["profiles"]:
        for e in p["events"]:
            if e["type"] == "O":
                calls[frames[e["frame"]]["name"]] += 1
elif fmt == "perfetto":
    names, iid = {}, None
    begins = Counter()
    for line in open(path):
        f = line.split(None, 1)
        if f[0] == "iid:":
            iid = f[1].strip()
        elif f[0] == "name:" and iid is not None:
            names[iid] = json.loads(f[1])
        elif f[0] == "name_iid:":
            begins[f[1].strip()] += 1
    for i, n in begins.items():
        calls[names.get(i, "iid " + i)] += n
elif fmt == "callgrind":
    # fn=(id) NAME names id; the cost line after fn= is "LINE SELF CALLS";
    # after calls= comes the call's own cost line, skipped.
    names, cur, skip = {}, None, False
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(3) is not None:
                names[m.group(2)] = m.group(3)
            if m.group(1) == "fn":
                cur, skip = names[m.group(2)], False
        elif line.startswith("calls="):
            skip = True
        elif cur and re.match(r"^\d+ \d+", line):
            if not skip:
                f = line.split()
                calls[cur] += int(f[2]) if len(f) > 2 else 0
            skip = False
print("".join("%s=%d " % (n, c) for n, c in sorted(calls.items()) if n.startswith("helper")))
EOF

run preload static-names static_names
check_run "static names" preload 0 "names_static done"
SN=$DIR
if report "static names" "$TRACE"; then
	expect_calls "static names" static_names "helper (names_static_a.c)=10" "helper (names_static_b.c)=5000"
fi

# sn_join: lines NAME=CALLS as one sorted line, as static_names.py prints them.
sn_join() { sort | tr '\n' ' '; }
# sn_check WHAT GOT: GOT is the two helpers with their calls, apart.
sn_check() {
	check "static names: $1 shows the two helpers apart, with their calls" "got '$2'" [ "$2" = "$SN_WANT" ]
}

"$HP" replay "$TRACE" >"$SN/replay" 2>"$SN/replay.err"
sn_check replay "$(grep -o '| *helper[^;]*();$' "$SN/replay" | sed 's/^| *//; s/();$//' | sort | uniq -c |
	awk '{ c = $1; $1 = ""; printf "%s=%d\n", substr($0, 2), c }' | sn_join)"
"$HP" tree "$TRACE" >"$SN/tree" 2>"$SN/tree.err"
sn_check tree "$(awk '/helper \(/ { n = $1; sub(/.*helper/, "helper"); printf "%s=%d\n", $0, n }' "$SN/tree" | sn_join)"
"$HP" export --format=folded -o "$SN/folded" "$TRACE" 2>"$SN/folded.err"
check "static names: folded has one stack for each helper" "$(brief "$SN/folded")" \
	[ "$(grep -c ';helper (names_static_a.c) [0-9]*$' "$SN/folded"):$(grep -c ';helper (names_static_b.c) [0-9]*$' "$SN/folded"):$(grep -c ';helper [0-9]*$' "$SN/folded")" = 1:1:0 ]
for fmt in chrome speedscope callgrind; do
	"$HP" export --format=$fmt -o "$SN/out.$fmt" "$TRACE" 2>"$SN/$fmt.err"
	sn_check $fmt "$(python3 "$SN_COUNT" $fmt "$SN/out.$fmt" 2>&1)"
done
"$HP" export --format=perfetto -o "$SN/out.perfetto" "$TRACE" 2>"$SN/perfetto.err"
if command -v protoc >/dev/null 2>&1; then
	protoc --decode=perfetto.protos.Trace -I"$ROOT/symbolize" hp_perfetto.proto <"$SN/out.perfetto" >"$SN/perfetto.txt" 2>>"$SN/perfetto.err"
	sn_check perfetto "$(python3 "$SN_COUNT" perfetto "$SN/perfetto.txt" 2>&1)"
else
	SKIP=$((SKIP + 1))
	echo "skip - static names: perfetto (protoc not installed: scripts/deps.sh installs it)"
fi
"$HP" export --format=pprof -o "$SN/out.pb.gz" "$TRACE" 2>"$SN/pprof.err"
if command -v go >/dev/null 2>&1; then
	HOME=${HOME:-$T} go tool pprof -top -sample_index=calls -nodefraction=0 -nodecount=1000 "$SN/out.pb.gz" >"$SN/pprof.top" 2>/dev/null
	sn_check pprof "$(awk '/flat%/ { t = 1; next } t && / helper/ { n = $1; sub(/.*% +/, ""); printf "%s=%d\n", $0, n }' "$SN/pprof.top" | sn_join)"
else
	SKIP=$((SKIP + 1))
	echo "skip - static names: pprof (go not installed: scripts/deps.sh installs it)"
fi
check "static names: every view and export ran without a word on stderr" "$(cat "$SN"/*.err | head -c 300)" \
	[ -z "$(cat "$SN"/*.err)" ]
