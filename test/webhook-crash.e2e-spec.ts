import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Api, Backend, productionBackend, startFleet, startTemplateWorker } from './support/baton';
import { RunningProcess, eventually, freePort, schedule } from './support/processes';
import { Got, Receiver } from './support/webhooks';

jest.setTimeout(600_000);

const TASKS = 2000;

/**
 * Webhooks keep their promise through crashes: 2,000 tasks with a `task.finished` subscription,
 * the scheduler killed (-9) twice mid-run and the receiver down for 20 s in the middle. Every
 * task's event arrives, verified; a duplicate is only ever a retry of the same webhook-id.
 */
describe('webhooks through crashes (mariadb + redis)', () => {
  let backend: Backend;
  let dir: string;
  const procs = new Set<RunningProcess>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-webhook-crash-'));
    backend = await productionBackend();
    backend.env = {
      ...backend.env,
      BATON_WEBHOOK_ALLOW: 'localhost',
      BATON_WEBHOOK_RETRY_SCHEDULE: '1s,2s,4s',
      BATON_WEBHOOK_RETRY_FOR: '10m',
      BATON_WEBHOOK_PER_ENDPOINT: '16',
      BATON_WEBHOOK_POLL: '200ms',
    };
  });

  afterAll(async () => {
    await Promise.all([...procs].map((p) => p.stop()));
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers every task.finished event, none lost, duplicates only as retries', async () => {
    const port = await freePort();
    const log = join(dir, 'received.jsonl');
    let receiver = await Receiver.start({ port, log });
    procs.add(receiver.proc);
    const fleet = await startFleet(backend, 1, 'hook-crash', procs);
    const worker = await startTemplateWorker(
      'hook-crash-w',
      fleet.urls[0],
      join(dir, 'runs.jsonl'),
    );
    procs.add(worker);
    const api = new Api(fleet.urls[0]);
    await api.waitForWorkers(1);
    const hook = await api.call<{ webhook_id: string; secret: string }>('POST', '/v1/webhooks', {
      url: receiver.hook('crash'),
      events: ['task.finished'],
    });
    expect(hook.status).toBe(201);
    const secret = { name: 'crash', secrets: [hook.data.secret] };
    await receiver.control('secret', secret);

    const ids: string[] = [];
    const createAll = (async () => {
      for (let i = 0; i < TASKS; i += 100) {
        const tasks = Array.from({ length: 100 }, (_, k) => ({
          create_info: { task_type: 'demo.echo', task_name: `hooked ${i + k}` },
          params: { i: i + k },
          idempotency_key: `hook-crash-${i + k}`,
        }));
        // Sent again while the scheduler is down or back; the idempotency keys make it once.
        const res = await eventually(
          async () => {
            const r = await api
              .call<{ task_id: string }[]>('POST', '/v1/tasks/batch', { tasks })
              .catch(() => undefined);
            return r && r.status < 300 ? r : undefined;
          },
          120_000,
          `batch ${i / 100}`,
        );
        ids.push(...res.data.map((t) => t.task_id));
      }
    })();

    const delivered = async (): Promise<Got[]> => receiver.got('crash').catch(() => []);
    await eventually(
      async () => ((await delivered()).length >= 300 ? true : undefined),
      120_000,
      '300 deliveries',
    );
    await fleet.schedulers[0].kill9(); // crash 1, mid-run
    await fleet.start(0);

    await eventually(
      async () => ((await delivered()).length >= 700 ? true : undefined),
      120_000,
      '700 deliveries',
    );
    await receiver.proc.kill9(); // the receiver goes away for 20 s
    const down = schedule();
    await down.at(8000);
    await fleet.schedulers[0].kill9(); // crash 2, while the receiver is down
    await fleet.start(0);
    await down.at(20_000);
    // Back with its secret from the first delivery it takes (the schedulers' retries are waiting).
    receiver = await Receiver.start({ port, log, secrets: { [secret.name]: secret.secrets } });
    procs.add(receiver.proc);
    await createAll;
    expect(new Set(ids).size).toBe(TASKS);

    const got = await eventually(
      async () => {
        const list = await delivered();
        const tasks = new Set(list.map((g) => g.task_id));
        return ids.every((id) => tasks.has(id)) ? list : undefined;
      },
      300_000,
      `a task.finished delivery for each of the ${TASKS} tasks`,
    );
    const byTask = new Map<string, Set<string>>();
    for (const g of got) {
      const set = byTask.get(g.task_id!) ?? new Set<string>();
      set.add(g.id);
      byTask.set(g.task_id!, set);
    }
    const twoIds = [...byTask].filter(([, set]) => set.size > 1);
    const unverified = got.filter((g) => !g.verified);
    const duplicates = got.length - byTask.size;
    console.log(
      `webhook crash test: ${TASKS} tasks, ${got.length} deliveries received, ` +
        `${byTask.size} distinct tasks, ${duplicates} duplicates (same webhook-id), ` +
        `${twoIds.length} tasks with two webhook-ids, ${unverified.length} unverified`,
    );
    expect(byTask.size).toBe(TASKS);
    expect(got.every((g) => g.type === 'task.finished' && g.task_status === 'FINISH')).toBe(true);
    expect(twoIds.map(([id]) => id)).toEqual([]);
    expect(unverified.map((g) => g.why)).toEqual([]);
  });
});
