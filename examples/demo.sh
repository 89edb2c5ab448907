#!/bin/sh
# make demo: builds the example with -finstrument-functions (linked with
# nothing of ours), runs it under `hookprof record`, and prints its profile.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -finstrument-functions -g -O2 "$top/examples/wordfreq.c" -o "$work/wordfreq"
cd "$work"
echo "\$ hookprof record -o wordfreq.hookprof -- ./wordfreq"
"$top/build/hookprof" record -o wordfreq.hookprof -- ./wordfreq
echo
echo "\$ hookprof report wordfreq.hookprof"
"$top/build/hookprof" report wordfreq.hookprof
