#!/usr/bin/env bash
# The whole test suite: servers up, build, static checks, unit + integration + e2e tests.
# Ends with one plain line "N passed, N failed" (every Jest test counts once, every check step once).
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .test-results
passed=0
failed=0
failures=()

step() { # name, command...
  local name=$1
  shift
  echo "=== $name"
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== FAILED: $name"
  fi
}

finish() {
  if [ ${#failures[@]} -gt 0 ]; then
    echo "Failed: ${failures[*]}"
  fi
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

step "services" bash scripts/services.sh
step "build" npm run --silent build
if [ "$failed" -gt 0 ]; then finish; fi
step "typecheck" npx tsc -p tsconfig.json --noEmit
step "lint" npx eslint .
step "format" npx prettier --check . --log-level warn
step "openapi drift" node dist/bin/generate-openapi.js --check

rm -f .test-results/jest.json
npx jest --maxWorkers=2 --json --outputFile=.test-results/jest.json "$@"
jest_rc=$?
if [ -f .test-results/jest.json ]; then
  read -r jp jf < <(node -e "const r=require('./.test-results/jest.json'); \
    const suiteErrors=r.testResults.filter(t=>t.status==='failed'&&t.assertionResults.length===0).length; \
    console.log(r.numPassedTests, r.numFailedTests + suiteErrors)")
  passed=$((passed + jp))
  failed=$((failed + jf))
  if [ "$jest_rc" -ne 0 ] && [ "$jf" -eq 0 ]; then
    failed=$((failed + 1))
    failures+=("jest exited $jest_rc")
  fi
else
  failed=$((failed + 1))
  failures+=("jest wrote no results (exit $jest_rc)")
fi
finish
