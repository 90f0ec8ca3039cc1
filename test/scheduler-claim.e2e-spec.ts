import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Api,
  Backend,
  productionBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess } from './support/processes';

jest.setTimeout(90_000);

/**
 * A scheduler keeps its claim on a task for its whole drive, not only around the run call: a
 * clean-up that takes longer than several leases is not taken over by a second scheduler.
 */
describe('the claim on MariaDB + Redis', () => {
  let backend: Backend;
  let dir: string;
  const procs: RunningProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-claim-'));
    backend = await productionBackend();
  });

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is renewed through a slow clean: one claim, one driver, from create to FINISH', async () => {
    // A short lease (1.5 s) and a dispatcher that looks often: a lapsed claim is taken at once.
    const env = {
      BATON_CLAIM_LEASE_MS: '1500',
      BATON_DISPATCH_INTERVAL_MS: '100',
      BATON_WORKER_STALE_MS: '600000',
    };
    const s1 = await startScheduler(backend, { BATON_INSTANCE_ID: 'c1', ...env });
    procs.push(s1);
    const api = new Api(s1.url);
    procs.push(await startTemplateWorker('claim-w1', s1.url, join(dir, 'w1.jsonl')));
    await api.waitForWorkers(1);
    procs.push(await startScheduler(backend, { BATON_INSTANCE_ID: 'c2', ...env }));

    const id = await api.create({
      create_info: { task_type: 'demo.flaky', task_name: 'slow clean' },
      params: { fail_times: 0, clean_ms: 5000 },
    });
    const done = await api.until(id, 'FINISH', 30_000);
    expect(done.outcome).toBe('SUCCESS');
    // Every claim takes a new fence: one claim drove the task through (the clean outlasted
    // three leases, and the other scheduler never took it).
    expect(done.fence).toBe(1);
    expect(await api.sequence(id)).toEqual(['INIT', 'CREATE', 'RUNNING', 'SUCCESS', 'FINISH']);
    // Whichever scheduler claimed it (they share the queue), it was the only one.
    const drivers = new Set(
      (await api.events(id)).map((e) => e.actor).filter((a) => a.startsWith('scheduler:')),
    );
    expect(drivers.size).toBe(1);
  });
});
