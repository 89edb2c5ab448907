#!/bin/sh
# tests/fuzz/run.sh [SECONDS] - builds build/fuzz/fuzz_trace and runs it for
# SECONDS (default 60) from the real traces of tests/fuzz/seeds (written by
# the e2e sample programs nested, jump, throw, threads, threads in ring mode,
# and nested cut short; and two of format 1.3, with chunk switches' own time,
# CALIBRATION and FILTER records). New inputs go to build/fuzz/corpus, a finding to
# build/fuzz/crash-*; exits non-zero on a finding. The last line is
# "1 passed, 0 failed" or "0 passed, 1 failed".
set -eu
cd "$(dirname "$0")/../.."
secs=${1:-60}
BUILD=${HOOKPROF_BUILD:-build}
make --no-print-directory fuzz BUILD="$BUILD"
mkdir -p "$BUILD/fuzz/corpus"
# -timeout: an input that takes seconds is a finding too (a crafted file
# must not make the reader slow); -rss_limit_mb likewise for memory.
# The closing line counts the run as one check, for .ci/run's sums.
if "$BUILD/fuzz/fuzz_trace" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 \
	-max_len=65536 -print_final_stats=1 -artifact_prefix="$BUILD/fuzz/" \
	"$BUILD/fuzz/corpus" tests/fuzz/seeds; then
	echo "1 passed, 0 failed"
else
	echo "fuzz: a finding, in $BUILD/fuzz/ (crash-*, timeout-* or oom-*)"
	echo "0 passed, 1 failed"
	exit 1
fi
