# render.awk - turns bench.sh's raw figures into tables (POSIX awk; mawk is fine).
#
# Input: lines "KEY VALUE...", KEY = prog.tool.metric (or machine.*, report.*).
# A key given several times is a list (one value per run): times use its
# minimum (noise on a shared machine only adds time), sizes its median.
# Modes (-v mode=...): program (with -v prog=NAME), summary, markdown;
# -v progs="A B ..." lists the programs (default: the four of issue 3).
# PROG.target.wall and PROG.target.cpu set a program's own targets for the
# overhead ratios (default 1.25x wall, 2x CPU).

{
	key = $1
	val = substr($0, length($1) + 2)
	if (key in v)
		v[key] = v[key] " " val
	else
		v[key] = val
	n[key]++
}

function has(k) { return (k in v) && v[k] != "" }

# median of the space-separated list under key k
function med(k,    a, m, i, j, t) {
	if (!has(k))
		return ""
	m = split(v[k], a, " ")
	for (i = 2; i <= m; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return m % 2 ? a[(m + 1) / 2] + 0 : (a[m / 2] + a[m / 2 + 1]) / 2
}

function lmax(k,    a, m, i, x) {
	m = split(v[k], a, " ")
	x = a[1] + 0
	for (i = 2; i <= m; i++)
		if (a[i] + 0 > x)
			x = a[i] + 0
	return x
}

function lmin(k,    a, m, i, x) {
	m = split(v[k], a, " ")
	x = a[1] + 0
	for (i = 2; i <= m; i++)
		if (a[i] + 0 < x)
			x = a[i] + 0
	return x
}

function best(k) { return has(k) ? lmin(k) : "" }

# slowest - fastest of a list; "" for a single run
function range(k) { return has(k) && n[k] >= 2 ? lmax(k) - lmin(k) : "" }

# How far the fastest runs of the no-op and floor cases may be off: the
# larger of their ranges ("" with single runs).
function noise(p, m,    a, b) {
	a = range(p ".noop." m)
	b = range(p ".floor." m)
	return a == "" || b == "" ? "" : (a > b ? a : b)
}

# (max - min) / median of a list, as a percentage; "-" for a single run
function spread(k,    m) {
	if (!has(k) || n[k] < 2)
		return "-"
	m = med(k)
	return m > 0 ? sprintf("%.0f%%", 100 * (lmax(k) - lmin(k)) / m) : "-"
}

function commas(x,    s, r) {
	s = sprintf("%.0f", x)
	r = ""
	while (length(s) > 3) {
		r = "," substr(s, length(s) - 2) r
		s = substr(s, 1, length(s) - 3)
	}
	return s r
}

function f(fmt, x) { return x == "" ? "n/a" : sprintf(fmt, x) }

# ---- the derived figures of one program, in d[] -----------------------------

function derive(p,    t, nw, nc, fw, fc, i, tools) {
	delete d
	d["calls"] = has(p ".calls") ? v[p ".calls"] + 0 : (has(p ".expected") ? v[p ".expected"] + 0 : "")
	d["calls_src"] = has(p ".calls") ? "counted in the hookprof trace" : \
		(has(p ".expected") ? "expected, not counted" : "not counted: no hookprof trace")
	split("noop floor hookprof uftrace", tools, " ")
	for (i = 1; i <= 4; i++) {
		t = tools[i]
		# The fastest run: on a shared machine noise only ever adds time.
		d[t "_wall"] = best(p "." t ".wall")
		d[t "_cpu"] = best(p "." t ".cpu")
		d[t "_rss"] = med(p "." t ".rss")
	}
	nw = d["noop_wall"]; nc = d["noop_cpu"]
	for (i = 2; i <= 4; i++) {
		t = tools[i]
		d[t "_nsw"] = d[t "_wall"] != "" && nw != "" && d["calls"] > 0 ? (d[t "_wall"] - nw) * 1e9 / d["calls"] : ""
		d[t "_nsc"] = d[t "_cpu"] != "" && nc != "" && d["calls"] > 0 ? (d[t "_cpu"] - nc) * 1e9 / d["calls"] : ""
		d[t "_rssg"] = d[t "_rss"] != "" && d["noop_rss"] != "" ? (d[t "_rss"] - d["noop_rss"]) / 1024 : ""
	}
	fw = d["floor_wall"]; fc = d["floor_cpu"]
	d["wall_ratio"] = d["hookprof_wall"] != "" && fw != "" && fw > nw ? (d["hookprof_wall"] - nw) / (fw - nw) : ""
	d["cpu_ratio"] = d["hookprof_cpu"] != "" && fc != "" && fc > nc ? (d["hookprof_cpu"] - nc) / (fc - nc) : ""
	d["time_ratio"] = d["hookprof_wall"] != "" && fw > 0 ? d["hookprof_wall"] / fw : ""
	# A ratio whose denominator, the floor's overhead, is under twice the
	# runs' noise could be off by half or more: it is shown, not judged.
	d["noise_wall"] = noise(p, "wall")
	d["noise_cpu"] = noise(p, "cpu")
	d["unsure_wall"] = d["wall_ratio"] != "" && d["noise_wall"] != "" && fw - nw < 2 * d["noise_wall"]
	d["unsure_cpu"] = d["cpu_ratio"] != "" && d["noise_cpu"] != "" && fc - nc < 2 * d["noise_cpu"]
	d["target_wall"] = has(p ".target.wall") ? v[p ".target.wall"] + 0 : 1.25
	d["target_cpu"] = has(p ".target.cpu") ? v[p ".target.cpu"] + 0 : 2
	d["hp_bytes"] = med(p ".hookprof.bytes")
	d["uf_bytes"] = med(p ".uftrace.bytes")
	d["hp_bpe"] = d["hp_bytes"] != "" && d["calls"] > 0 ? d["hp_bytes"] / (2 * d["calls"]) : ""
	d["uf_bpe"] = d["uf_bytes"] != "" && d["calls"] > 0 ? d["uf_bytes"] / (2 * d["calls"]) : ""
	d["lost"] = has(p ".hookprof.lost") ? lmax(p ".hookprof.lost") : ""
	d["ev_min"] = has(p ".hookprof.events") ? lmin(p ".hookprof.events") : ""
	d["ev_max"] = has(p ".hookprof.events") ? lmax(p ".hookprof.events") : ""
}

function verdict(x, limit, above) {
	if (x == "")
		return ""
	return (above ? x >= limit : x <= limit) ? "met" : "MISSED"
}

function ratio(x) { return x == "" ? "n/a" : sprintf("%.2fx", x) }

# "*" after a ratio over its target, "?" after one below the noise
function mark(x, limit, unsure) { return unsure ? "?" : x != "" && x > limit ? "*" : "" }

# The verdict on overhead ratio m ("wall" or "cpu") of the program derived.
function ratio_verdict(m) {
	if (d["unsure_" m])
		return sprintf("below the noise: the floor adds %.3f s, the no-op and floor runs spread up to %.3f s",
			d["floor_" m] - d["noop_" m], d["noise_" m])
	return verdict(d[m "_ratio"], d["target_" m], 0)
}

# ---- program mode --------------------------------------------------------------

function row(label, t, p,    w, ns) {
	if (d[t "_wall"] == "") {
		if (has(p "." t ".failed"))
			printf "  %-16s failed (exit status %s)\n", label, v[p "." t ".failed"]
		return
	}
	ns = t == "noop" ? "" : sprintf("%9s / %s", f("%.1f", d[t "_nsw"]), f("%.1f", d[t "_nsc"]))
	printf "  %-16s %8.3f %7s %9.3f %8.1f MiB   %s\n", label, d[t "_wall"], spread(p "." t ".wall"),
		d[t "_cpu"], d[t "_rss"] / 1024, ns
}

function print_program(p,    e) {
	derive(p)
	printf "\n%s: %s\n", p, v[p ".desc"]
	printf "  calls %s (%s", d["calls"] == "" ? "n/a" : commas(d["calls"]), d["calls_src"]
	if (has(p ".expected") && has(p ".calls"))
		printf "; expected %s%s", commas(v[p ".expected"]),
			v[p ".calls"] + 0 == v[p ".expected"] + 0 ? "" : " -- MISMATCH"
	printf ")\n"
	if (d["ev_min"] != "") {
		e = d["ev_min"] == d["ev_max"] ? commas(d["ev_min"]) : commas(d["ev_min"]) " to " commas(d["ev_max"])
		printf "  hookprof trace: %s events per run, %s lost%s\n", e, commas(d["lost"]),
			d["calls"] != "" && (d["ev_min"] != 2 * d["calls"] || d["ev_max"] != 2 * d["calls"]) ? \
			" -- NOT 2 x calls" : ""
	}
	printf "  %-16s %8s %7s %9s %12s   %s\n", "run", "wall s", "spread", "cpu s", "peak RSS",
		"ns/call over no-op (wall / cpu)"
	row("no-op", "noop", p)
	row("floor", "floor", p)
	row("hookprof", "hookprof", p)
	row("uftrace (1 run)", "uftrace", p)
	if (d["wall_ratio"] != "" || d["cpu_ratio"] != "")
		printf "  hookprof/floor overhead: wall %s (target <= %sx: %s), cpu %s (target <= %sx: %s); plain wall time %s\n",
			ratio(d["wall_ratio"]), d["target_wall"], ratio_verdict("wall"),
			ratio(d["cpu_ratio"]), d["target_cpu"], ratio_verdict("cpu"),
			ratio(d["time_ratio"])
	if (d["hp_bpe"] != "" || d["uf_bpe"] != "") {
		printf "  bytes per event:"
		if (d["hp_bpe"] != "")
			printf " hookprof %.2f (%.1f MB; target <= 3: %s)", d["hp_bpe"], d["hp_bytes"] / 1e6,
				verdict(d["hp_bpe"], 3, 0)
		if (d["uf_bpe"] != "")
			printf "%s uftrace %.2f (%.1f MB)", d["hp_bpe"] != "" ? "," : "", d["uf_bpe"], d["uf_bytes"] / 1e6
		printf "\n"
	}
	if (d["hookprof_rssg"] != "")
		printf "  peak RSS over no-op: hookprof %+.1f MiB (target <= 32 MiB: %s), floor %+.1f MiB\n",
			d["hookprof_rssg"], verdict(d["hookprof_rssg"], 32, 0), d["floor_rssg"]
}

# ---- report figures ------------------------------------------------------------

function derive_report() {
	r_ev = has("report.events") ? v["report.events"] + 0 : ""
	r_hp = best("report.hookprof.wall")
	r_hprss = med("report.hookprof.rss")
	r_uf = best("report.uftrace.wall")
	r_ufrss = med("report.uftrace.rss")
	r_eps = r_hp != "" && r_hp > 0 && r_ev != "" ? r_ev / r_hp : ""
	s_ev = has("small.events") ? v["small.events"] + 0 : ""
	s_rss = med("small.hookprof.rss")
	r_ratio = r_hp != "" && r_hp > 0 && r_uf != "" ? r_uf / r_hp : ""
}

# ---- summary mode ----------------------------------------------------------------

function print_summary(    i, p) {
	printf "== summary: fastest of %s runs (uftrace: 1 run; noise only adds time); overhead = time above the plain (no-op) run\n",
		v["machine.reps"]
	printf "   %s, %s CPUs, %s, %s; load average at start %s\n", v["machine.model"], v["machine.nproc"],
		v["machine.kernel"], v["machine.date"], v["machine.load"]
	printf "%-9s %11s %9s %9s %9s %9s %9s %8s %8s %9s\n", "", "", "ns/call", "ns/call", "ns/call",
		"hookprof", "hookprof", "hookprof", "uftrace", "hookprof"
	printf "%-9s %11s %9s %9s %9s %9s %9s %8s %8s %9s\n", "program", "calls", "floor", "hookprof",
		"uftrace", "wall ovh", "cpu ovh", "B/event", "B/event", "RSS MiB"
	for (i = 1; i <= np; i++) {
		p = plist[i]
		derive(p)
		printf "%-9s %11s %9s %9s %9s %9s %9s %8s %8s %9s\n", p,
			d["calls"] == "" ? "n/a" : commas(d["calls"]), f("%.1f", d["floor_nsw"]),
			f("%.1f", d["hookprof_nsw"]), f("%.1f", d["uftrace_nsw"]), ratio(d["wall_ratio"]) mark(d["wall_ratio"], d["target_wall"], d["unsure_wall"]),
			ratio(d["cpu_ratio"]) mark(d["cpu_ratio"], d["target_cpu"], d["unsure_cpu"]), f("%.2f", d["hp_bpe"]), f("%.2f", d["uf_bpe"]),
			f("%+.1f", d["hookprof_rssg"])
	}
	printf "%-9s %11s %9s %9s %9s %9s %9s %8s %8s %9s\n", "target", "", "", "", "",
		"<= 1.25x", "<= 2x", "<= 3", "", "<= 32"
	printf "   * over its target; minigzip's wall target is 1.5x, threads8's and threads64's 1.4x wall, 1.6x cpu\n"
	printf "   ? below the noise: the floor's overhead is under twice the spread of the no-op or floor runs, so\n"
	printf "     the ratio could be off by half or more (more runs, BENCH_REPS, or a quieter machine)\n"
	printf "   wall ovh = (hookprof wall - no-op wall) / (floor wall - no-op wall); cpu ovh likewise with user+sys\n"
	derive_report()
	if (r_hp != "") {
		printf "report: hookprof report of the fib trace (%s events): %.3f s = %.1f M events/s, peak RSS %.1f MiB\n",
			commas(r_ev), r_hp, r_eps / 1e6, r_hprss / 1024
		if (r_uf != "")
			printf "        uftrace report of its fib recording: %.3f s, peak RSS %.1f MiB: hookprof is %.1fx faster (target >= 10x: %s)\n",
				r_uf, r_ufrss / 1024, r_ratio, verdict(r_ratio, 10, 1)
		if (s_rss != "")
			printf "        hookprof report of fib(25) (%s events): peak RSS %.1f MiB (memory does not grow with events)\n",
				commas(s_ev), s_rss / 1024
	}
}

# ---- markdown mode -----------------------------------------------------------------

function md_row(p, label, t) {
	if (d[t "_wall"] == "")
		return
	printf "| %s | %s | %.3f | %s | %.3f | %.1f | %s | %s |\n", p, label, d[t "_wall"],
		spread(p "." t ".wall"), d[t "_cpu"], d[t "_rss"] / 1024,
		t == "noop" ? "" : f("%.1f", d[t "_nsw"]), t == "noop" ? "" : f("%.1f", d[t "_nsc"])
}

function print_markdown(    i, p) {
	printf "<!-- written by tests/bench/bench.sh (make bench) -->\n"
	printf "Measured %s on %s, %s CPUs, %s; %s", v["machine.date"], v["machine.model"],
		v["machine.nproc"], v["machine.kernel"], v["machine.cc"]
	if (has("machine.uftrace"))
		printf "; uftrace %s", v["machine.uftrace"]
	if (has("machine.commit"))
		printf "; hookprof commit %s", v["machine.commit"]
	printf "; load average at start %s.\nFastest of %s runs for times, medians for sizes and memory (uftrace: 1 run); programs built with `-finstrument-functions -O2`.\n",
		v["machine.load"], v["machine.reps"]
	printf "*no-op*: glibc's empty hooks; *floor*: hooks that only store {address, rdtsc} (16 bytes) in a\n"
	printf "thread-local 4096-entry ring; *hookprof*: `LD_PRELOAD=libhookprof.so`, stream mode;\n"
	printf "*uftrace*: `uftrace record`. Overhead = time above the no-op run.\n\n"
	printf "| program | calls | floor ns/call | hookprof ns/call | uftrace ns/call | wall overhead vs floor (target) | CPU overhead vs floor (target) | hookprof bytes/event (target <= 3) | uftrace bytes/event | hookprof RSS growth MiB (target <= 32) |\n"
	printf "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
	for (i = 1; i <= np; i++) {
		p = plist[i]
		derive(p)
		printf "| %s | %s | %s | %s | %s | %s (<= %sx)%s | %s (<= %sx)%s | %s | %s | %s |\n", p,
			d["calls"] == "" ? "n/a" : commas(d["calls"]), f("%.1f", d["floor_nsw"]),
			f("%.1f", d["hookprof_nsw"]), f("%.1f", d["uftrace_nsw"]), ratio(d["wall_ratio"]),
			d["target_wall"], d["unsure_wall"] ? " below the noise" : "", ratio(d["cpu_ratio"]), d["target_cpu"],
			d["unsure_cpu"] ? " below the noise" : "", f("%.2f", d["hp_bpe"]), f("%.2f", d["uf_bpe"]),
			f("%+.1f", d["hookprof_rssg"])
	}
	derive_report()
	if (r_hp != "") {
		printf "\n| report of the fib trace (%s events) | time s | events/s | peak RSS MiB |\n", commas(r_ev)
		printf "|---|---:|---:|---:|\n"
		printf "| `hookprof report` | %.3f | %.1f M | %.1f |\n", r_hp, r_eps / 1e6, r_hprss / 1024
		if (r_uf != "") {
			printf "| `uftrace report` | %.3f | %.1f M | %.1f |\n", r_uf, r_ev / r_uf / 1e6, r_ufrss / 1024
			printf "\nhookprof's report is %.1fx faster than uftrace's (target >= 10x).\n", r_ratio
		}
		if (s_rss != "")
			printf "On fib(25) (%s events, %.0fx fewer) `hookprof report` peaks at %.1f MiB: its memory does not grow with the number of events.\n",
				commas(s_ev), (s_ev > 0 ? r_ev / s_ev : 0), s_rss / 1024

	}
	printf "\n| program | run | wall s | spread | CPU s | peak RSS MiB | ns/call over no-op (wall) | ns/call over no-op (CPU) |\n"
	printf "|---|---|---:|---:|---:|---:|---:|---:|\n"
	for (i = 1; i <= np; i++) {
		p = plist[i]
		derive(p)
		md_row(p, "no-op", "noop")
		md_row(p, "floor", "floor")
		md_row(p, "hookprof", "hookprof")
		md_row(p, "uftrace", "uftrace")
	}
	printf "\nspread = (slowest - fastest) / median wall time over the runs. *below the noise*: the floor's\n"
	printf "overhead is under twice the spread (in seconds) of the no-op or floor runs: the ratio could be off by half or more.\n"
}

END {
	np = split(progs != "" ? progs : "fib leaf cxx threads8", plist, " ")
	if (mode == "program")
		print_program(prog)
	else if (mode == "summary")
		print_summary()
	else if (mode == "markdown")
		print_markdown()
}
