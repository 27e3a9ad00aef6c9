#!/usr/bin/env bash
# The README's second command (and what .ci/run runs): set everything up, then run the test suites.
# Set WEBGPU_REQUIRED=1 to make a missing WebGPU adapter a failure instead of skipped GPU suites.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The browser suite (test/browser) and the distributed suite (test/distributed) run when no file
# filter is given or a filter names them; only then does prepare install chromium / redis-server.
browser=1
redis=1
filters=()
for arg in "$@"; do case "$arg" in -*) ;; *) filters+=("$arg") ;; esac; done
if [ "${#filters[@]}" -gt 0 ]; then
  browser=0
  redis=0
  for f in "${filters[@]}"; do
    case "$f" in *browser*) browser=1 ;; esac
    case "$f" in *distributed*) redis=1 ;; esac
  done
fi
WEBGPU_KNN_BROWSER=$browser WEBGPU_KNN_REDIS=$redis bash scripts/prepare.sh
npx tsc -p tsconfig.test.json --noEmit
report=$(mktemp)
status=0
npx vitest run --reporter=default --reporter=json --outputFile.json="$report" "$@" || status=$?
# One plain closing line, whatever the reporter printed above it.
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
' "$report" || true
rm -f "$report"
exit "$status"
