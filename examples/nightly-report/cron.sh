#!/usr/bin/env bash
# The nightly report from cron, with the relock command: three "nodes" fire the same job at once;
# one runs it, the other two exit 75 without running it. In production each node's crontab has:
#
#   0 3 * * *  relock run nightly-report --at-least 600000 --at-most 7200000 --quiet -- /opt/app/build-report.sh || [ $? -eq 75 ]
#
# (--at-least: the lock stays taken ten minutes from the start, also when the job ends sooner, so a
# node whose clock or trigger is up to that late skips it too; --at-most: a job still running after
# two hours gets SIGTERM and the lock ends; `|| [ $? -eq 75 ]`: "another node has it" is not a failure.)
#
#   REDIS_URL=redis://127.0.0.1:6379 examples/nightly-report/cron.sh   # exits 1 unless one node ran it
#
# The relock command: $RELOCK if set, else `relock` on the PATH (an installed package, under npx or
# npm exec), else the repository's build (dist/cli.mjs).
set -u
: "${REDIS_URL:?set REDIS_URL to a Redis, e.g. redis://127.0.0.1:6379}"
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${RELOCK:-}" ]; then
  if command -v relock >/dev/null 2>&1; then RELOCK=relock; else RELOCK="node $here/../../dist/cli.mjs"; fi
fi

fire=$(date -u +%Y-%m-%dT%H:%M:%S.%N)   # tonight's run, the same name on every node
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT

for n in 1 2 3; do
  (
    $RELOCK run "nightly-report:$fire" --at-least 60000 -- \
      sh -c 'echo "node $1: building the report (fencing token $RELOCK_FENCING_TOKEN)"; sleep 1; echo "$1" >> "$2"' sh "$n" "$runs"
    echo "node $n: relock exited $?"
  ) &
done
wait

count=$(wc -l < "$runs" | tr -d ' ')
if [ "$count" -eq 1 ]; then
  echo "OK: one node of three built the report"
else
  echo "WRONG: the report was built $count times"
  exit 1
fi
