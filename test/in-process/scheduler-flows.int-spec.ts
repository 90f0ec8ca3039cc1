import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { InProcessBaton, startInProcess } from '../support/in-process';
import { FlowBaton, schedulerFlowCases } from '../support/scheduler-flows.cases';
import { manualTime } from '../support/waits';

jest.setTimeout(120_000);

/**
 * The scheduler's flows in one process on the embedded defaults (SQLite, memory queue, local
 * locks) and a ManualClock: backoffs, heartbeats, start times, queue timeouts and rate limits are
 * passed by moving the clock, so no speed of the machine decides a case. The same cases run
 * through processes on MariaDB + Redis in test/scheduler-flows.e2e-spec.ts.
 */
let baton: InProcessBaton;

async function inProcess(): Promise<FlowBaton> {
  baton = await startInProcess();
  const waits = manualTime(baton.clock);
  const runLogs = ['worker-a', 'worker-b'].map((name) => join(baton.dir, `${name}.jsonl`));
  await baton.addWorker('worker-a', { WORKER_RUN_LOG: runLogs[0] });
  // B with its callbacks off: the scheduler polls it; it keeps its tasks in memory.
  await baton.addWorker('worker-b', { WORKER_RUN_LOG: runLogs[1], WORKER_CALLBACKS: 'off' });
  await waits.eventually(
    async () => {
      const ws = (await baton.api.call<{ health: string }[]>('GET', '/v1/workers')).data;
      return ws.filter((w) => w.health === 'healthy').length === 2 ? true : undefined;
    },
    10_000,
    'two healthy workers',
  );
  return {
    api: baton.api,
    dir: baton.dir,
    workerUrl: (name) => baton.workers.get(name) as string,
    async restartWorkerB() {
      const killedAt = baton.clock.now();
      await baton.restartWorker('worker-b');
      return killedAt;
    },
    runLogs: () => runLogs,
    output: () => baton.output(),
    realTime: false,
    ...waits,
    until: (id, status, timeoutMs) => waits.until(baton.api, id, status, timeoutMs),
    stop: () => baton.stop(),
  };
}

describe('scheduler flows in-process (sqlite + memory + local locks, ManualClock)', () => {
  schedulerFlowCases(inProcess);

  // Two cases above look for what the scheduler must not have logged: the log they read is live
  // to the end (workers built since, and restarted, did not switch it off).
  it('reads the log the cases search', () => {
    new Logger('Probe').warn('a warning logged after every case');
    expect(baton.output()).toContain('WARN Probe: a warning logged after every case');
  });
});
