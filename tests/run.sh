#!/bin/bash
# tests/run.sh - runs every test of hookprof; `make check` calls it as
#
#   tests/run.sh build/tests/check_a build/tests/check_b ...
#
# Each argument is a unit test binary (Check framework, run with its default
# CK_FORK); then tests/e2e/run.sh runs. The counts are added up: unit checks
# from the Check summary lines ("100%: Checks: 5, Failures: 0, Errors: 0"),
# end-to-end checks from the e2e summary line. The last line printed is
# exactly "N passed, M failed"; the exit status is 0 only if nothing failed
# and at least one test ran. A unit binary that crashes, prints no summary or
# exits non-zero with no failure in its summary counts as one failure.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PASSED=0
FAILED=0

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hookprof-tests.XXXXXX") || { echo "0 passed, 1 failed"; exit 1; }
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM HUP

# Unit tests: traces they cause (their code may be instrumented) land in $TMP.
mkdir -p "$TMP/traces"
unset CK_FORK HOOKPROF_MODE HOOKPROF_BUFFER HOOKPROF_CLOCK
# A loaded machine must not make a Check timeout fire.
export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-4}

for bin in "$@"; do
	name=${bin##*/}
	if [ ! -x "$bin" ]; then
		echo "not ok - $name: no such test binary ($bin)"
		FAILED=$((FAILED + 1))
		continue
	fi
	HOOKPROF_OUTPUT=$TMP/traces "$bin" >"$TMP/unit.out" 2>&1
	rc=$?
	cat "$TMP/unit.out"
	# passed failed, summed over the summary lines; "none" if there is none.
	counts=$(awk '
		/^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+/ {
			line = $0
			sub(/^[0-9]+%: Checks: /, "", line); checks = line + 0
			sub(/^[0-9]+, Failures: /, "", line); failures = line + 0
			sub(/^[0-9]+, Errors: /, "", line); errors = line + 0
			p += checks - failures - errors; f += failures + errors; n++
		}
		END { if (n) print p, f; else print "none" }' "$TMP/unit.out")
	if [ "$counts" = none ]; then
		echo "not ok - $name: no Check summary line (exit status $rc)"
		FAILED=$((FAILED + 1))
		continue
	fi
	p=${counts% *}
	f=${counts#* }
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $name: exit status $rc although its summary shows no failure"
		FAILED=$((FAILED + 1))
	fi
	echo "# $name: $p passed, $f failed"
done

# End-to-end tests.
E2E=$ROOT/tests/e2e/run.sh
"$E2E" 2>&1 | tee "$TMP/e2e.out"
rc=${PIPESTATUS[0]}
summary=$(grep -E '^e2e: [0-9]+ passed, [0-9]+ failed$' "$TMP/e2e.out" | tail -1)
if [ -z "$summary" ]; then
	echo "not ok - e2e: no summary line (exit status $rc)"
	FAILED=$((FAILED + 1))
else
	# shellcheck disable=SC2086 # "e2e: N passed, M failed" into $2 and $4
	set -- $summary
	PASSED=$((PASSED + $2))
	FAILED=$((FAILED + $4))
	if [ "$rc" -ne 0 ] && [ "$4" -eq 0 ]; then
		echo "not ok - e2e: exit status $rc although its summary shows no failure"
		FAILED=$((FAILED + 1))
	fi
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ] && [ "$PASSED" -gt 0 ]
