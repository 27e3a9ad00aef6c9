#!/usr/bin/env bash
# The README's second command (and what .ci/run runs): set everything up, then run the test suites.
# Set WEBGPU_REQUIRED=1 to make a missing WebGPU adapter a failure instead of skipped GPU suites.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/prepare.sh
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
