#!/bin/bash
# scripts/speedscope-shot.sh TRACE OUT.png - a picture of the speedscope
# web app showing TRACE's flame chart, taken by a real headless Chromium:
# exports TRACE with `hookprof export --format=speedscope`, serves the app
# (the npm package `speedscope`, installed into a temporary directory) and
# the file from a local server on 127.0.0.1, and lets Chromium render it.
# Installs chromium, npm and python3 from Debian if they are missing.
#
#   scripts/speedscope-shot.sh wordfreq.hookprof docs/img/speedscope.png
#
# HOOKPROF_BUILD=dir picks the hookprof to export with (default build/).
# Not part of `make check` (Chromium is heavy): 30 s to 2 min once installed
# (examples/wordfreq.c, 2.4 million events, 93 MB of JSON: 1 min 45 s on a
# loaded 2-core machine), plus the first install of chromium and npm.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 TRACE OUT.png" >&2
	exit 2
fi
trace=$1
png=$2
top=$(cd "$(dirname "$0")/.." && pwd)
hookprof=${HOOKPROF_BUILD:-$top/build}/hookprof
[ -r "$trace" ] || { echo "$0: $trace: cannot read it" >&2; exit 1; }
[ -x "$hookprof" ] || { echo "$0: no $hookprof: run make first" >&2; exit 1; }

need=""
command -v chromium >/dev/null 2>&1 || need="$need chromium"
command -v npm >/dev/null 2>&1 || need="$need npm"
command -v python3 >/dev/null 2>&1 || need="$need python3"
if [ -n "$need" ]; then
	echo "speedscope-shot: installing$need" >&2
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	# shellcheck disable=SC2086
	$sudo apt-get install -y -qq --no-install-recommends $need >/dev/null
fi

work=$(mktemp -d)
server=""
cleanup() {
	[ -z "$server" ] || kill "$server" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

npm install --prefix "$work/npm" --no-audit --no-fund --loglevel=error speedscope >/dev/null
www=$work/www
cp -r "$work/npm/node_modules/speedscope/dist/release" "$www"
"$hookprof" export --format=speedscope -o "$www/profile.json" "$trace"

# Port 0: the system picks a free one, and the server says which.
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$www" >"$work/server.log" 2>&1 &
server=$!
port=""
for _ in $(seq 50); do
	port=$(sed -n 's/.* port \([0-9][0-9]*\).*/\1/p' "$work/server.log" | head -n 1)
	[ -z "$port" ] || break
	sleep 0.1
done
[ -n "$port" ] || { echo "$0: the local server did not start: $(cat "$work/server.log")" >&2; exit 1; }

url="http://127.0.0.1:$port/index.html#profileURL=http://127.0.0.1:$port/profile.json&title=$(basename "$trace")"
# --no-sandbox: Chromium's sandbox refuses to run as root (CI, containers).
# The virtual time budget lets the app fetch the file and draw before the shot.
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--window-size=1400,800 --virtual-time-budget=15000 \
	--screenshot="$work/shot.png" "$url" >"$work/chromium.log" 2>&1 || {
	echo "$0: chromium failed: $(tail -n 3 "$work/chromium.log")" >&2
	exit 1
}
[ -s "$work/shot.png" ] || { echo "$0: chromium wrote no picture" >&2; exit 1; }
mkdir -p "$(dirname "$png")"
cp "$work/shot.png" "$png"
echo "speedscope-shot: $png"
