import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Api, productionBackend, startScheduler, startTemplateWorker } from './support/baton';
import { RunningProcess } from './support/processes';
import { FlowBaton, schedulerFlowCases } from './support/scheduler-flows.cases';
import { realTime } from './support/waits';

/**
 * The scheduler's flows through real processes on MariaDB + Redis queue + Redis locks: the
 * deployment's own backends, each move over the network. The same cases run in one process on
 * the embedded defaults and a ManualClock in test/in-process/scheduler-flows.int-spec.ts.
 */
async function processes(): Promise<FlowBaton> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-flows-'));
  const backend = await productionBackend();
  const scheduler = await startScheduler(backend);
  const api = new Api(scheduler.url);
  const runLogs: string[] = [];
  const startWorker = (name: string, extra: NodeJS.ProcessEnv = {}): Promise<RunningProcess> => {
    const log = join(dir, `${name}.jsonl`);
    if (!runLogs.includes(log)) runLogs.push(log);
    return startTemplateWorker(name, api.base, log, {
      WORKER_ROLLBACK_DIR: join(dir, 'rollback'),
      ...extra,
    });
  };
  const workers = new Map<string, RunningProcess>();
  workers.set('worker-a', await startWorker('worker-a'));
  await api.waitForWorkers(1);
  // B registers like A, but with its callbacks off: it still heartbeats its registration (so it
  // is picked), and the scheduler must poll it.
  workers.set('worker-b', await startWorker('worker-b', { WORKER_CALLBACKS: 'off' }));
  await api.waitForWorkers(2);
  const url = (name: string): string => (workers.get(name) as RunningProcess).url;
  return {
    api,
    dir,
    workerUrl: url,
    async restartWorkerB() {
      const port = new URL(url('worker-b')).port;
      await (workers.get('worker-b') as RunningProcess).kill9();
      const killedAt = Date.now();
      workers.set(
        'worker-b',
        await startWorker('worker-b', { WORKER_CALLBACKS: 'off', WORKER_PORT: port }),
      );
      return killedAt;
    },
    runLogs: () => runLogs,
    output: () => scheduler.output(),
    realTime: true,
    ...realTime,
    until: (id, status, timeoutMs) => realTime.until(api, id, status, timeoutMs),
    async stop() {
      await Promise.all([...workers.values()].map((w) => w.stop()));
      await scheduler.stop();
      await backend.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('scheduler flows on mariadb + redis queue + redis locks', () => {
  schedulerFlowCases(processes);
});
