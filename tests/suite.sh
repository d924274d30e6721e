#!/usr/bin/env bash
# `make test`'s two parts: the lint and the unit tests (no cluster), and the real-cluster tests (one
# cluster per backend for the session, one test at a time). The Makefile sets the environment:
#   BIN           the venv's bin folder
#   TEST_PARTS    serial    one part after the other
#                 parallel  side by side at equal share (more than 2 cores)
#                 beside    side by side, the unit part with a small CPU share (tests/low_cpu.sh): it
#                           takes what the real-cluster part leaves idle (2 cores, the default there)
#   UNIT_WORKERS  pytest-xdist workers for the unit tests (0: one process)
#   JUNIT         PREFIX: PREFIX-unit.xml, PREFIX-chaos.xml (and PREFIX-unit-alone.xml, below)
#   PYTEST_ARGS   passed to both parts; a part it leaves without a test (exit 5) does not fail
#   ENGINE_FIRST  a command run before the real-cluster tests (the compose backend's engine and images)
#   LOW_CPU       the command that gives the unit part its small share (tests/low_cpu.sh)
#
# Beside the real-cluster tests, a unit test that waits for something with a deadline can be starved
# by the small share this script gave it. So, there only, the unit tests that failed run again alone,
# at full share, once the real-cluster part is over; they are listed, and the suite fails only if they
# fail again (a failure alone is a defect; a failure only when starved is reported, never hidden).
set -uo pipefail

: "${BIN:?}" "${TEST_PARTS:=serial}" "${UNIT_WORKERS:=0}" "${JUNIT:=}" "${PYTEST_ARGS:=}" "${ENGINE_FIRST:=true}"
read -r -a args <<< "$PYTEST_ARGS"
mkdir -p results
unit_log=results/unit-tests.log
chaos_log=results/chaos-tests.log  # the local backend's, or every selected backend's in one session
unit_alone_log=results/unit-tests-alone.log  # beside: the unit tests that failed there, run again alone
compose_log=results/chaos-compose.log  # side by side: the compose backend's own session
rm -f "$unit_log" "$unit_alone_log" "$chaos_log" "$compose_log"
# pytest's summary line of a failed test: it names a test file (a captured log's "ERROR    kafka..." does not)
failed_line='^(FAILED|ERROR) [^ ]+\.py'
# the unit part's own cache: the two parts' last-failed lists must not overwrite each other
unit_cache=.pytest_cache/unit-part

lint() {
    "$BIN/ruff" check --quiet harness chaos clusters tests && "$BIN/mypy" --no-error-summary
}
unit_tests() {
    "$BIN/pytest" -m 'not chaos and not library' -n "$UNIT_WORKERS" -o cache_dir="$unit_cache" \
        ${JUNIT:+--junitxml="$JUNIT-unit.xml"} "${args[@]}"
}
# lint, then the unit tests whatever lint said; exit 3 if lint failed (never 1: that is run again)
unit_part() {
    local lint_rc=0 rc=0
    lint || lint_rc=$?
    unit_tests || rc=$?
    if [ $lint_rc != 0 ]; then
        echo "make test: lint failed (ruff or mypy, above)"
        rc=3
    fi
    return $rc
}
chaos_tests() {  # the real-cluster tests of the backends in EOS_CHAOS_BACKENDS, as one pytest session
    "$BIN/pytest" -m 'chaos and not library' "$@" "${args[@]}"
}
# Side by side (parallel, beside) with both backends selected, each backend's tests are a pytest
# session of their own, at once: the compose backend's (about a quarter of the whole) in the
# background, its output in results/chaos-compose.log. Their clusters take ports of their own (19092
# and 29092 up), as do the clusters their tests start (19192, 29192); the clean-up checks count only
# what each session started. Otherwise one session runs every selected backend's, one after the other.
chaos_part() {
    local backends=",${EOS_CHAOS_BACKENDS:-local,compose},"
    if [ "$TEST_PARTS" = serial ] || [[ $backends != *,local,* ]] || [[ $backends != *,compose,* ]]; then
        $ENGINE_FIRST || return $?
        chaos_tests ${JUNIT:+--junitxml="$JUNIT-chaos.xml"} 2>&1 | tee "$chaos_log"
        return "${PIPESTATUS[0]}"
    fi
    local rc=0 crc=0 others=${backends//,local,/,}
    others=${others//,compose,/,}
    echo "make test: the compose backend's real-cluster tests run beside the local backend's; their output: $compose_log"
    # exec: a SIGTERM to this background job reaches pytest itself (which takes it as Ctrl-C)
    ( $ENGINE_FIRST || exit $?
      EOS_CHAOS_BACKENDS=compose exec "$BIN/pytest" -m 'chaos and not library' -o cache_dir=.pytest_cache/chaos-compose \
        ${JUNIT:+--junitxml="$JUNIT-chaos-compose.xml"} "${args[@]}" ) > "$compose_log" 2>&1 &
    local cpid=$!
    trap 'kill -TERM $cpid ${upid:-} 2>/dev/null' INT TERM
    EOS_CHAOS_BACKENDS="local${others%,}" chaos_tests ${JUNIT:+--junitxml="$JUNIT-chaos.xml"} 2>&1 | tee "$chaos_log"
    rc=${PIPESTATUS[0]}
    wait $cpid || crc=$?
    echo "---- the compose backend's real-cluster tests ($compose_log), run beside the local backend's:"
    cat "$compose_log"
    echo "make test: the local backend's real-cluster tests exit $rc, the compose backend's $crc"
    if [ $rc = 5 ] && [ $crc = 5 ]; then return 5; fi
    [ $rc = 5 ] && rc=0
    [ $crc = 5 ] && crc=0
    [ $rc != 0 ] && return $rc
    return $crc
}

# The project's own modules compiled once, ahead: where PYTHONDONTWRITEBYTECODE is set (this
# machine's environment sets it) no process writes them, and each of the suite's hundreds of Python
# processes would compile what it imports again (the runner's imports: ~1 s of CPU of 2.5).
"$BIN/python" -m compileall -q -j 0 harness chaos clusters tests > /dev/null 2>&1 || true

# Last, what each part's pytest sessions said at their end (failures, errors, counts): the output is
# long and a CI shows its tail, where the unit part's log (printed after the real-cluster tests)
# hid which real-cluster test had failed.
said_at_the_end() {
    echo "---- make test: how each part's pytest sessions ended (their logs in results/):"
    local log
    for log in "$unit_log" "$unit_alone_log" "$chaos_log" "$compose_log"; do
        [ -f "$log" ] || continue
        grep -E "$failed_line"'|^=+ .*\b(passed|failed|errors?|skipped|deselected|no tests ran)\b.* =+$' "$log" |
            sed "s|^|  ${log#results/}: |"
    done
}

unit=0 chaos=0
case "$TEST_PARTS" in
serial)
    unit_part 2>&1 | tee "$unit_log"
    unit=${PIPESTATUS[0]}
    chaos_part || chaos=$?
    ;;
parallel | beside)
    if [ "$TEST_PARTS" = beside ]; then
        echo "make test: the lint and unit tests run beside the real-cluster tests with a small CPU share (tests/low_cpu.sh); their output: $unit_log"
        export -f lint unit_tests unit_part
        export BIN UNIT_WORKERS JUNIT PYTEST_ARGS unit_cache
        ${LOW_CPU:-tests/low_cpu.sh} bash -c 'read -r -a args <<< "$PYTEST_ARGS"; unit_part' > "$unit_log" 2>&1 &
    else
        echo "make test: the lint and unit tests run beside the real-cluster tests; their output: $unit_log"
        unit_part > "$unit_log" 2>&1 &
    fi
    upid=$!
    trap 'kill -TERM $upid 2>/dev/null' INT TERM
    chaos_part || chaos=$?
    wait $upid || unit=$?
    echo "---- the lint and unit tests ($unit_log), run beside the real-cluster tests:"
    cat "$unit_log"
    if [ "$TEST_PARTS" = beside ] && [ $unit = 1 ]; then
        echo "---- make test: these unit tests failed beside the real-cluster tests; they run again alone, at full CPU share:"
        grep -E "$failed_line" "$unit_log" | sed 's/^/  /'
        unit=0
        "$BIN/pytest" -m 'not chaos and not library' --lf --lfnf=none -o cache_dir="$unit_cache" \
            ${JUNIT:+--junitxml="$JUNIT-unit-alone.xml"} "${args[@]}" 2>&1 | tee "$unit_alone_log"
        unit=${PIPESTATUS[0]}
        if [ $unit = 5 ]; then
            echo "make test: the unit part failed but recorded no failed test to run again (see its output above)"
            unit=1
        elif [ $unit = 0 ]; then
            echo "make test: the unit tests that failed beside the real-cluster tests passed alone: starved there, not broken (listed above)"
        fi
    fi
    ;;
*)
    echo "make test: TEST_PARTS=$TEST_PARTS; allowed: serial, parallel, beside" >&2
    exit 2
    ;;
esac

if [ $unit = 5 ] && [ $chaos = 5 ]; then
    echo "make test: PYTEST_ARGS selects no test" >&2
    exit 5
fi
[ $unit = 5 ] && unit=0
[ $chaos = 5 ] && chaos=0
said_at_the_end
echo "make test: lint and unit tests exit $unit, real-cluster tests exit $chaos"
[ $unit = 0 ] && [ $chaos = 0 ]
