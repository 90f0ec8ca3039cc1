import { exec } from 'node:child_process';
import { ContractErrorCode } from '../errors/contract.exception';
import { TaskStatus } from '../enums/task-status.enum';
import { Check } from './conformance-check';
import { ConformanceProbe } from './conformance-probe';
import { Data, NotApplicable, expect, expectError, expectStatus } from './expectations';

/** How long a run must stand still to count as stopped or paused. */
const STILL_MS = 1200;
/** A step already under way when the call came may end (and report) first. */
const SETTLE_MS = 500;
/** How long a worker may take to come back after the restart command. */
const RESTART_WAIT_MS = 30_000;

/** What says a run is going: its progress and its last beat. */
async function motion(probe: ConformanceProbe, id: string): Promise<string> {
  let progress: Data = {};
  try {
    progress = await probe.optional(probe.read(id, 'progress'), 'progress');
  } catch (err) {
    if (!(err instanceof NotApplicable)) throw err; // a worker without progress: beats only
  }
  const beat = await probe.ok(probe.read(id, 'heartbeat'), 'heartbeat');
  return JSON.stringify([
    progress.percent ?? null,
    progress.message ?? null,
    beat.heartbeat_at ?? null,
  ]);
}

/** Fails when the run moves (progress or heartbeat changes) during STILL_MS, once settled. */
async function expectStill(probe: ConformanceProbe, id: string, what: string): Promise<void> {
  await probe.wait(SETTLE_MS);
  const before = await motion(probe, id);
  await probe.wait(STILL_MS);
  const after = await motion(probe, id);
  expect(before === after, `${what}: the run went on (progress/heartbeat ${before} -> ${after})`);
}

async function waitForStatus(
  probe: ConformanceProbe,
  id: string,
  status: TaskStatus,
  ms: number,
): Promise<Data> {
  const deadline = probe.clock.now() + ms;
  for (;;) {
    const data = await probe.ok(probe.read(id, 'status'), 'status');
    if (data.task_status === status) return data;
    expect(
      probe.clock.now() < deadline,
      `status stayed ${String(data.task_status)}, expected ${status}`,
    );
    await probe.wait(100);
  }
}

function runShell(command: string): Promise<void> {
  return new Promise((resolve, reject) =>
    exec(command, { timeout: RESTART_WAIT_MS }, (err) => (err ? reject(err) : resolve())),
  );
}

/** Checks on a run in progress (they need --long-params), and the restart (--restart-cmd). */
export const RUNNING_CHECKS: readonly Check[] = [
  {
    name: 'pause of a running task: PAUSE, the run stands still, continue resumes it',
    section: 'Pausing',
    run: async ({ probe }) => {
      const id = await probe.startLongRun('pause-running', 1);
      const paused = await probe.write(id, 'pause', 1);
      if (paused.status === 501) {
        await probe.write(id, undefined, 1, { event: 'cancel' });
        throw new NotApplicable('the type is not pausable while running (501)');
      }
      expectStatus(await probe.ok(Promise.resolve(paused), 'pause'), TaskStatus.PAUSE, 'pause');
      await expectStill(probe, id, 'paused');
      const resumed = await probe.ok(probe.write(id, 'continue', 1), 'continue');
      expectStatus(resumed, TaskStatus.RUNNING, 'continue');
      const alive = await probe.ok(probe.read(id, 'heartbeat'), 'heartbeat');
      expect(alive.alive === true, 'heartbeat after continue: not alive');
      await probe.ok(probe.write(id, undefined, 1, { event: 'cancel' }), 'cancel');
      return 'RUNNING -> PAUSE (still) -> RUNNING (alive)';
    },
  },
  {
    // Contract 1.2.0: a scheduler recovers (runs again elsewhere) an attempt answered lost.
    name: 'heartbeat of a run going on: alive, and not execution_lost',
    section: 'Crash recovery',
    run: async ({ probe }) => {
      const id = await probe.startLongRun('alive-run', 1);
      try {
        const beat = await probe.ok(probe.read(id, 'heartbeat'), 'heartbeat');
        expectStatus(beat, TaskStatus.RUNNING, 'heartbeat of a running task');
        expect(beat.alive === true, 'a run going on is answered not alive');
        expect(
          beat.execution_lost !== true,
          'a run going on is answered execution_lost: true (the scheduler would run it again elsewhere)',
        );
      } finally {
        await probe.write(id, undefined, 1, { event: 'cancel' });
      }
      return 'RUNNING, alive, not lost';
    },
  },
  {
    name: 'cancel of a running task: FAIL, and the run stops',
    section: 'Statuses and transitions',
    run: async ({ probe }) => {
      const id = await probe.startLongRun('cancel-running', 1);
      const answer = await probe.ok(probe.write(id, undefined, 1, { event: 'cancel' }), 'cancel');
      expect(
        answer.task_status === TaskStatus.FAIL || answer.task_status === TaskStatus.RUNNING,
        `cancel answered ${String(answer.task_status)}, expected FAIL (or RUNNING until it stops)`,
      );
      await waitForStatus(probe, id, TaskStatus.FAIL, 10_000);
      const beat = await probe.ok(probe.read(id, 'heartbeat'), 'heartbeat');
      expect(beat.alive === false, 'heartbeat after the cancel: still alive');
      await expectStill(probe, id, 'cancelled');
      return 'FAIL, not alive, still';
    },
  },
  {
    name: 'a new attempt over a running one: the old run stops before the new attempt is held',
    section: 'Idempotency and attempts',
    run: async ({ probe }) => {
      const id = await probe.startLongRun('supersede', 1);
      const next = await probe.ok(
        probe.create(id, 2, 2, probe.options.longParams),
        'create attempt 2',
      );
      expectStatus(next, TaskStatus.CREATE, 'create of attempt 2 over a running attempt 1');
      expect(next.attempt === 2, `attempt is ${String(next.attempt)}, expected 2`);
      await expectStill(probe, id, 'attempt 2 in CREATE');
      const status = await probe.ok(probe.read(id, 'status'), 'status');
      expectStatus(status, TaskStatus.CREATE, 'status after the old run had time to end');
      const beat = await probe.ok(probe.read(id, 'heartbeat'), 'heartbeat');
      expect(beat.alive === false, 'heartbeat of attempt 2 in CREATE: alive');
      const old = await probe.write(id, undefined, 1, { event: 'cancel' });
      expectError(old, 409, ContractErrorCode.STALE_FENCE, 'a cancel of attempt 1 with its fence');
      await probe.ok(probe.write(id, undefined, 2, { event: 'cancel' }), 'cancel attempt 2');
      return 'attempt 2 in CREATE, nothing runs, attempt 1 fenced off';
    },
  },
  {
    name: 'restart: the worker keeps its tasks and says which runs it lost',
    section: 'Crash recovery',
    run: async ({ probe }) => {
      const command = probe.options.restartCmd;
      if (!command)
        throw new NotApplicable('needs --restart-cmd (a command that restarts the worker)');
      const held = probe.taskId('restart-held');
      await probe.ok(probe.create(held, 7), 'create');
      const running = probe.options.longParams
        ? await probe.startLongRun('restart-run', 7)
        : undefined;
      await runShell(command);
      const deadline = probe.clock.now() + RESTART_WAIT_MS;
      let kept: Data | undefined;
      while (!kept) {
        try {
          kept = await probe.ok(probe.read(held, 'status'), 'status');
        } catch (err) {
          // Not listening yet (or not ready): asked again until the deadline.
          expect(
            probe.clock.now() < deadline,
            `the worker did not answer after the restart: ${String(err)}`,
          );
          await probe.wait(200);
        }
      }
      expectStatus(kept, TaskStatus.CREATE, 'status after the restart of a task created before it');
      const stale = await probe.write(held, 'running', 6);
      expectError(
        stale,
        409,
        ContractErrorCode.STALE_FENCE,
        'a fence lower than the one seen before the restart',
      );
      if (!running) return 'task and fence kept (no --long-params: no run to lose)';
      const beat = await probe.ok(probe.read(running, 'heartbeat'), 'heartbeat');
      expectStatus(beat, TaskStatus.RUNNING, 'heartbeat of the run going at the restart');
      expect(beat.alive === false, 'a run that died with the old process is answered alive');
      expect(
        beat.execution_lost === true,
        'the run that died with the old process is not answered execution_lost: true',
      );
      // The scheduler's recovery: a new attempt over the lost one.
      const next = await probe.ok(
        probe.create(running, 8, 2, probe.options.longParams),
        'create attempt 2',
      );
      expectStatus(next, TaskStatus.CREATE, 'create of attempt 2 over the lost run');
      await probe.ok(probe.write(running, undefined, 8, { event: 'cancel' }), 'cancel attempt 2');
      return 'tasks and fences kept; the lost run is RUNNING, alive false, execution_lost true; attempt 2 takes its place';
    },
  },
];
