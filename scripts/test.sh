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

# Lanes side by side, each one file at a time; the last one runs every file the others do not.
# Their CPU together is what the two cores can give: one lane alone leaves a core idle while a
# file waits on a server, a restart or a browser. What goes where:
# - heavy: e2e files that start several schedulers under load and kill them (their restarts and
#   failovers are what they measure). Two of them at once on two cores made each restart take
#   10+ s, so they take turns in one lane. rolling-restart is one of them: run beside them on a
#   loaded box, its deploy fell 150 s behind.
# - waiting: files that spend their time waiting on clocks: real servers' lease TTLs and sessions
#   running out (the lock conformance suite), a cron's slots, retry schedules, a kit's
#   restart, the flows' real backoffs, a permanent task's recovery, a Redis Cluster's failover.
#   They use little CPU. Every file on the machine's Redis Cluster is here (the queue and lock
#   conformance suites' Cluster cases, redis-cluster, which kills a master): one at a time, no
#   Cluster case runs while a master is down.
# - outside: files that drive programs outside Node (Chromium, Prometheus, Python workers, an
#   identity provider's pages), and
#   four files that mostly wait on a lease, a long run or a partition (timer ownership, log
#   tailing, attempt binding, partition refusal), which balance the lanes.
# - light: the rest.
# A new file goes in the list its kind names; the `Times:` line shows how the lanes end.
LANES=(heavy waiting outside light)
declare -A PATTERN=(
  [heavy]='test/(chaos|scheduler-crash|scheduler-crash-points|topology-crash|webhook-crash|fleet-limits|back-pressure|rolling-restart)\.e2e-spec\.ts$'
  [waiting]='(libs/locks/test/locks\.conformance\.int-spec|apps/scheduler/src/queue/queue\.conformance\.int-spec|test/(producer-ha|conformance-kit|worker-side-kit|shutdown-partition|webhooks|scheduler-flows|permanent|redis-cluster)\.e2e-spec)\.ts$'
  [outside]='test/(console|console-ops|console-ops-api|console-locks|console-task-search|console-topologies|console-sso|deployment|python-worker|worker-contract-versions|producer-ownership|logdumper|attempt-binding|partition-refusal|metrics)\.e2e-spec\.ts$'
)
others=""
for name in "${LANES[@]}"; do
  [ -n "${PATTERN[$name]:-}" ] && others+="${others:+|}${PATTERN[$name]}"
done
PATTERN[light]="^(?!.*(${others}))"
declare -A PID=() RC=()
rm -f .test-results/*.json .test-results/*.log .test-results/*.rc
lanes_began=$SECONDS
# --forceExit: a lane ends once its results are written, even when a failed test left a handle
# open (a process or a timer it never got to stop); otherwise the run would wait for CI's limit.
jest_lane() { # name, testPathPattern, jest args...
  local name=$1 pattern=$2
  shift 2
  node node_modules/jest/bin/jest.js --runInBand --forceExit --json \
    --outputFile=".test-results/$name.json" --testPathPattern "$pattern" "$@" \
    > ".test-results/$name.log" 2>&1
}
# Node 22, the other supported line (the rest runs on .nvmrc's 24): the unit tier and the
# in-process integration files (Baton whole on SQLite, the memory queue and a controlled clock)
# run again on it, from the npm registry's node package (scripts/with-node.sh): the unit tier
# after the waiting lane, the in-process files after the outside lane, the two that end first.
NODE_22=22.23.5
declare -A NODE22=([waiting]=node22-unit [outside]=node22-in-process)
declare -A NODE22_ARGS=(
  [node22-unit]='--selectProjects unit'
  [node22-in-process]='--selectProjects integration --testPathPattern test/in-process/'
)
node22_lane() { # name, jest args...
  local name=$1
  shift
  # shellcheck disable=SC2086 # the lane's selection is several words
  BATON_NODE=$NODE_22 bash scripts/with-node.sh bash -c \
    'echo "($0 on Node $(node -v))"; exec node node_modules/jest/bin/jest.js "$@"' "$name" \
    --runInBand --forceExit --json --outputFile=".test-results/$name.json" \
    ${NODE22_ARGS[$name]} "$@" > ".test-results/$name.log" 2>&1
  echo $? > ".test-results/$name.rc"
}
for name in "${LANES[@]}"; do
  if [ -n "${NODE22[$name]:-}" ]; then
    (
      rc=0
      jest_lane "$name" "${PATTERN[$name]}" "$@" || rc=$?
      node22_lane "${NODE22[$name]}" "$@"
      exit $rc
    ) &
  else
    jest_lane "$name" "${PATTERN[$name]}" "$@" &
  fi
  PID[$name]=$!
done
for name in "${LANES[@]}"; do
  RC[$name]=0
  wait "${PID[$name]}" || RC[$name]=$?
  cat ".test-results/$name.log"
  if [ -n "${NODE22[$name]:-}" ]; then cat ".test-results/${NODE22[$name]}.log"; fi
done
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
for name in "${LANES[@]}"; do lane "$name" "${RC[$name]}"; done
for name in "${NODE22[@]}"; do
  lane "$name" "$(cat ".test-results/$name.rc" 2> /dev/null || echo 1)"
done
finish
