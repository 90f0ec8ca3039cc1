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
record() { # name, exit code, seconds
  timings+=("$1 $3 s")
  if [ "$2" -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("$1")
    echo "=== FAILED: $1"
  fi
}

step() { # name, command...
  local name=$1 began=$SECONDS ok=0
  shift
  echo "=== $name"
  "$@" || ok=$?
  record "$name" "$ok" $((SECONDS - began))
}

# Checks that read the tree and share nothing run side by side (each batch at once on the two
# cores); each one's output is printed, in order, once all of them have ended.
side_by_side=()
step_beside() { # name, command...
  local name=$1 log=.test-results/step-${#side_by_side[@]}
  shift
  side_by_side+=("$name")
  (
    began=$SECONDS
    "$@" > "$log.log" 2>&1
    echo "$? $((SECONDS - began))" > "$log.rc"
  ) &
}
steps_beside_end() {
  wait
  local i
  for i in "${!side_by_side[@]}"; do
    local rc=1 secs=0
    echo "=== ${side_by_side[$i]}"
    cat ".test-results/step-$i.log"
    # A step that wrote no exit code failed.
    [ -f ".test-results/step-$i.rc" ] && read -r rc secs < ".test-results/step-$i.rc"
    record "${side_by_side[$i]}" "$rc" "$secs"
  done
  side_by_side=()
}

finish() {
  local t line=""
  for t in "${timings[@]}"; do line+="${line:+, }$t"; done
  echo "Times: $line"
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
rm -f .test-results/step-*
static_began=$SECONDS
step_beside "typecheck" npx tsc -p tsconfig.json --noEmit
step_beside "lint" npx eslint .
steps_beside_end
step_beside "console typecheck" npx tsc -p apps/console/ui/tsconfig.json
step_beside "format" npx prettier --check . --log-level warn
step_beside "openapi drift" node dist/bin/generate-openapi.js --check
steps_beside_end
timings+=("static checks $((SECONDS - static_began)) s")

# Three lanes side by side, each one file at a time. The heavy lane runs the e2e files that
# start several schedulers under load and kill them (their restarts and failovers are what they
# measure): two of them at once on two cores made each restart take 10+ s. It also runs long
# files of no such kind, so that it and the light lane end together. The light lane runs
# everything else but the waiting lane: files that spend their time waiting on real servers'
# clocks (lease TTLs and sessions running out, which is their subject), using little CPU, so they
# cost the other two lanes almost nothing.
HEAVY='test/(chaos|scheduler-crash|scheduler-crash-points|topology-crash|webhook-crash|rolling-restart|fleet-limits|producer-ownership|producer-ha|back-pressure|conformance-kit|attempt-binding|logdumper)\.e2e-spec\.ts$'
WAITING='libs/locks/test/locks\.conformance\.int-spec\.ts$'
rm -f .test-results/heavy.json .test-results/light.json .test-results/waiting.json .test-results/*.log
lanes_began=$SECONDS
npx jest --runInBand --json --outputFile=.test-results/heavy.json --testPathPattern "$HEAVY" "$@" \
  > .test-results/heavy.log 2>&1 &
heavy_pid=$!
npx jest --runInBand --json --outputFile=.test-results/waiting.json --testPathPattern "$WAITING" \
  "$@" > .test-results/waiting.log 2>&1 &
waiting_pid=$!
npx jest --runInBand --json --outputFile=.test-results/light.json \
  --testPathPattern "^(?!.*(${HEAVY}|${WAITING}))" "$@" > .test-results/light.log 2>&1 &
light_pid=$!
wait "$light_pid"
light_rc=$?
cat .test-results/light.log
wait "$waiting_pid"
waiting_rc=$?
cat .test-results/waiting.log
wait "$heavy_pid"
heavy_rc=$?
cat .test-results/heavy.log
timings+=("lanes $((SECONDS - lanes_began)) s")

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
lane waiting "$waiting_rc"
lane heavy "$heavy_rc"
finish
