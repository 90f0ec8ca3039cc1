#!/usr/bin/env bash
# The whole test suite: servers up, build, static checks, unit + integration + e2e tests.
# Ends with one plain line "N passed, N failed" (every Jest test counts once, every check step once).
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .test-results
passed=0
failed=0
failures=()

timings=()
step() { # name, command...
  local name=$1 began=$SECONDS
  shift
  echo "=== $name"
  local ok=0
  "$@" || ok=$?
  timings+=("$name $((SECONDS - began)) s")
  if [ "$ok" -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== FAILED: $name"
  fi
}

finish() {
  local IFS=,
  echo "Times: ${timings[*]}"
  unset IFS
  if [ ${#failures[@]} -gt 0 ]; then
    echo "Failed: ${failures[*]}"
  fi
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

step "services" bash scripts/services.sh
step "build" npm run --silent build
# The console's pages (Vite): the browser tests open them.
step "console build" npm run --silent build:console
if [ "$failed" -gt 0 ]; then finish; fi
step "typecheck" npx tsc -p tsconfig.json --noEmit
step "console typecheck" npx tsc -p apps/console/ui/tsconfig.json
step "lint" npx eslint .
step "format" npx prettier --check . --log-level warn
step "openapi drift" node dist/bin/generate-openapi.js --check

# Two lanes side by side, one core each. The heavy lane runs, one file at a time, the e2e files
# that start several schedulers under load and kill them (their restarts and failovers are what
# they measure): two of them at once on two cores made each restart take 10+ s. It also runs two
# long files of no such kind (the conformance kit, lock holders), so the lanes end together. The
# other lane runs everything else, one file at a time.
HEAVY='test/(chaos|scheduler-crash|scheduler-crash-points|topology-crash|webhook-crash|rolling-restart|fleet-limits|producer-ownership|producer-ha|back-pressure|conformance-kit|task-locks)\.e2e-spec\.ts$'
rm -f .test-results/heavy.json .test-results/light.json .test-results/*.log
lanes_began=$SECONDS
npx jest --runInBand --json --outputFile=.test-results/heavy.json --testPathPattern "$HEAVY" "$@" \
  > .test-results/heavy.log 2>&1 &
heavy_pid=$!
npx jest --runInBand --json --outputFile=.test-results/light.json \
  --testPathPattern "^(?!.*${HEAVY})" "$@" > .test-results/light.log 2>&1 &
light_pid=$!
wait "$light_pid"
light_rc=$?
cat .test-results/light.log
wait "$heavy_pid"
heavy_rc=$?
cat .test-results/heavy.log
timings+=("both lanes $((SECONDS - lanes_began)) s")

lane() { # name, exit code: adds the lane's Jest counts to the totals
  local name=$1 rc=$2 file=.test-results/$1.json jp="" jf=""
  if [ -f "$file" ]; then
    read -r jp jf < <(node -e "const r=require('./$file'); \
      const suiteErrors=r.testResults.filter(t=>t.status==='failed'&&t.assertionResults.length===0).length; \
      console.log(r.numPassedTests, r.numFailedTests + suiteErrors)")
    if ! [[ "$jp" =~ ^[0-9]+$ && "$jf" =~ ^[0-9]+$ ]]; then
      # An unreadable result file says nothing passed: count the lane as failed.
      failed=$((failed + 1))
      failures+=("jest ($name lane) results unreadable")
      return
    fi
    timings+=("$name lane: $(node scripts/lane-times.mjs "$file")")
    passed=$((passed + jp))
    failed=$((failed + jf))
    if [ "$rc" -ne 0 ] && [ "$jf" -eq 0 ]; then
      failed=$((failed + 1))
      failures+=("jest ($name lane) exited $rc")
    fi
  else
    failed=$((failed + 1))
    failures+=("jest ($name lane) wrote no results (exit $rc)")
  fi
}
lane light "$light_rc"
lane heavy "$heavy_rc"
finish
