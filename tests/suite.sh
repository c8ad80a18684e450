#!/usr/bin/env bash
# `make test`: every check of the project in three steps, each running side by side what does not
# fight over a server, so that two cores are kept busy (the Flink and S3 tests alone leave them
# half idle, waiting on restarts and start-ups):
#
#   1. lint, types and the documentation site (two at once), while the S3 server and the Flink
#      cluster are fetched (the first time) and started;
#   2. the unit suite (pytest-xdist, every core), while what takes a server away runs on its own,
#      one test at a time: the S3 server's restart and the Flink faults (TaskManagers and Python
#      workers killed, the S3 server stopped, a full disk);
#   3. the S3 tests beside the Flink pipeline tests (three xdist workers, one file each: the
#      pipeline tests run one after another, as each counts its job's records per TaskManager).
#
# The output of what runs in the background of a step is kept in out/suite/ and printed once it
# ends. Every step runs even when one before failed (a failed run reports all it can); the exit
# status is the first failure's. The cluster and the server are stopped however the run ends.
#
# Run by make, from the repository root, with PY (the venv's python), XDIST, SLOWEST,
# TEST_TIMEOUT and SERVICES_TIMEOUT set.
set -uo pipefail

: "${PY:?}" "${XDIST:?}" "${SLOWEST:?}" "${TEST_TIMEOUT:?}" "${SERVICES_TIMEOUT:?}"
export PYTHON="$PWD/$PY"
FLINK=services/flink/flink.sh
S3=services/s3/s3.sh
S3_RESTART=tests/s3/test_s3_service.py::test_data_survives_a_restart
LOGS=out/suite
mkdir -p "$LOGS"

status=0
failed() { [ "$status" -ne 0 ] || status=$1; }
# shellcheck disable=SC2329  # called by the trap
stop_services() { "$FLINK" down; "$S3" down; }
trap stop_services EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Prints the log of what ran in the background, under a title.
report() {
  echo "===== $1 (output kept in $2) ====="
  cat "$2"
}

# --- 1. checks, and the servers started beside them ---
{ "$S3" fetch && "$FLINK" fetch && "$S3" up --fresh && "$FLINK" up; } >"$LOGS/services-up.log" 2>&1 &
up=$!
"${MAKE:-make}" --no-print-directory -j2 lint docs-check || failed $?
wait "$up"; started=$?
report "S3 server and Flink cluster" "$LOGS/services-up.log"
if [ "$started" -ne 0 ]; then
  failed "$started"
  exit "$status"
fi

# --- 2. the unit suite, beside what takes a server away ---
"$PY" -m pytest -m "flink or s3" $SLOWEST --timeout="$SERVICES_TIMEOUT" "$S3_RESTART" \
  tests/flink/test_flink_faults.py >"$LOGS/faults.log" 2>&1 &
faults=$!
# shellcheck disable=SC2086  # XDIST and SLOWEST are lists of options
"$PY" -m pytest -m "not flink and not s3" $XDIST $SLOWEST --timeout="$TEST_TIMEOUT" || failed $?
wait "$faults" || failed $?
report "the S3 server's restart and the Flink faults" "$LOGS/faults.log"

# --- 3. the S3 tests beside the Flink pipeline tests ---
# shellcheck disable=SC2086
"$PY" -m pytest -m "flink or s3" -n 3 --dist loadfile $SLOWEST --timeout="$SERVICES_TIMEOUT" \
  tests/s3 tests/flink/test_flink_pipelines.py --deselect "$S3_RESTART" || failed $?

exit "$status"
