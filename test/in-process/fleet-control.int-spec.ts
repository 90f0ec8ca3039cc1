import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { authHeaders } from '@baton/task-contract';
import { rampBucket } from '../../apps/scheduler/src/task-types/worker-rules';
import { readRunLogs } from '../../apps/worker-template/src/run-log/run-log-analysis';
import { Api, SECRET } from '../support/baton';
import { InProcessBaton, startInProcess } from '../support/in-process';
import { Waits, manualTime } from '../support/waits';

jest.setTimeout(300_000);

interface Worker {
  worker_id: string;
  version: string;
  health: string;
  draining: boolean;
  draining_since: string | null;
  blacklist: { reason: string; since: string; until: string | null } | null;
  excluded: Record<string, string | null>;
}

interface Task {
  task_id: string;
  task_status: string;
  outcome: string | null;
  worker_id: string | null;
}

interface Attempt {
  attempt: number;
  worker_id: string | null;
}

/**
 * Fleet control in one process (scheduler on the embedded defaults, template workers of chosen
 * versions, all on a ManualClock): a type's version rules keep workers below `min_version` or of a blocked
 * version from its new tasks, a ramp sends its share of new tasks to a new version, a drained
 * worker takes no new task but finishes the one it runs, and a worker blacklisted by hand takes
 * none until the blacklist ends or is lifted. The API says why a worker is left out.
 */
describe('fleet control', () => {
  let baton: InProcessBaton;
  let waits: Waits;
  let api: Api;
  /** The workers a test started, stopped and deregistered after it. */
  const started = new Set<string>();

  const runLog = (workerId: string): string => join(baton.dir, `${workerId}.jsonl`);

  const startWorker = async (
    workerId: string,
    version: string,
    extra: NodeJS.ProcessEnv = {},
  ): Promise<string> => {
    const url = await baton.addWorker(workerId, {
      WORKER_VERSION: version,
      WORKER_RUN_LOG: runLog(workerId),
      ...extra,
    });
    started.add(workerId);
    return url;
  };

  /** Waits until every named worker shows healthy, and answers their views. */
  const healthy = (...ids: string[]): Promise<Worker[]> =>
    waits.eventually(
      async () => {
        const ws = (await api.call<Worker[]>('GET', '/v1/workers')).data;
        const mine = ids.map((id) => ws.find((w) => w.worker_id === id));
        return mine.every((w) => w?.health === 'healthy') ? (mine as Worker[]) : undefined;
      },
      60_000,
      `workers ${ids.join(', ')} healthy`,
    );

  const worker = async (id: string): Promise<Worker> => {
    const w = (await api.call<Worker[]>('GET', '/v1/workers')).data.find((x) => x.worker_id === id);
    if (!w) throw new Error(`worker ${id} is not listed`);
    return w;
  };

  /** A worker leaves the registry for good: stopped, then deregistered as its own signed call. */
  const retire = async (id: string): Promise<void> => {
    await baton.removeWorker(id);
    started.delete(id);
    const path = `/v1/workers/${id}`;
    const res = await request(`${api.base}${path}`, {
      method: 'DELETE',
      headers: authHeaders(
        { mode: 'hmac', secret: SECRET },
        { method: 'DELETE', pathWithQuery: path, body: '' },
      ),
    });
    await res.body.dump();
  };

  const setRules = async (taskType: string, rules: unknown): Promise<void> => {
    const res = await api.call('PATCH', `/v1/task-types/${taskType}`, { worker_rules: rules });
    expect([res.status, res.data.worker_rules]).toEqual([
      200,
      rules === null ? null : expect.objectContaining(rules as object),
    ]);
  };

  /**
   * Makes `n` tasks of `taskType` in batches of 500, labelled `fleet:<name>`; answers their ids in
   * creation order.
   */
  const createTasks = async (
    n: number,
    name: string,
    taskType = 'demo.echo',
    params: Record<string, unknown> = {},
  ): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 500) {
      const made = await api.client.createTasks({
        tasks: Array.from({ length: Math.min(500, n - i) }, (_, k) => ({
          create_info: { task_type: taskType, task_name: `${name} ${i + k}` },
          params,
          labels: { fleet: name },
        })),
      });
      ids.push(...made.map((t) => t.task_id));
    }
    return ids;
  };

  const task = async (id: string): Promise<Task> =>
    (await api.call<Task>('GET', `/v1/tasks/${id}`)).data;

  /** The tasks labelled `fleet:<name>`, page by page. */
  const labelled = async (name: string): Promise<Task[]> => {
    const all: Task[] = [];
    let cursor: string | null = null;
    do {
      const page: { items: Task[]; next_cursor: string | null } = (
        await api.call<{ items: Task[]; next_cursor: string | null }>(
          'GET',
          `/v1/tasks?label=fleet:${name}&limit=500${cursor ? `&cursor=${cursor}` : ''}`,
        )
      ).data;
      all.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor);
    return all;
  };

  /** Waits until the `n` tasks labelled `fleet:<name>` have all finished, however long it takes. */
  const finished = (name: string, n: number, timeoutMs = 120_000): Promise<Task[]> =>
    waits.eventually(
      async () => {
        const tasks = await labelled(name);
        return tasks.length === n && tasks.every((t) => t.task_status === 'FINISH')
          ? tasks
          : undefined;
      },
      timeoutMs,
      `${n} tasks of ${name} finishing`,
    );

  /** Waits until one task has finished. */
  const finishedOne = (id: string, timeoutMs = 60_000): Promise<Task> =>
    waits.eventually(
      async () => {
        const t = await task(id);
        return t.task_status === 'FINISH' ? t : undefined;
      },
      timeoutMs,
      `task ${id} finishing`,
    );

  /** The workers every attempt of the tasks went to, with how many attempts each. */
  const attemptWorkers = async (ids: string[]): Promise<Record<string, number>> => {
    const counts: Record<string, number> = {};
    for (const id of ids)
      for (const a of (await api.call<Attempt[]>('GET', `/v1/tasks/${id}/attempts`)).data)
        counts[a.worker_id ?? 'none'] = (counts[a.worker_id ?? 'none'] ?? 0) + 1;
    return counts;
  };

  /** The tasks of `ids` a worker's run log shows it ran. */
  const ranOn = (workerId: string, ids: string[]): Set<string> => {
    const wanted = new Set(ids);
    const log = runLog(workerId);
    return new Set(
      (existsSync(log) ? readRunLogs([log]) : [])
        .filter((r) => wanted.has(r.task_id))
        .map((r) => r.task_id),
    );
  };

  beforeAll(async () => {
    baton = await startInProcess();
    waits = manualTime(baton.clock);
    api = baton.api;
  });

  afterEach(async () => {
    for (const id of [...started.keys()]) await retire(id);
    for (const type of ['demo.echo', 'demo.sleep'])
      await api.call('PATCH', `/v1/task-types/${type}`, { worker_rules: null });
  });

  afterAll(async () => {
    await baton?.stop();
  });

  it('gives no task to a worker below min_version, and says why on the worker', async () => {
    await startWorker('fc-min-old', '1.9.3');
    await startWorker('fc-min-new', '1.10.0');
    await healthy('fc-min-old', 'fc-min-new');
    await setRules('demo.echo', { min_version: '1.10' });

    const ids = await createTasks(60, 'min-version');
    const tasks = await finished('min-version', 60);
    expect(tasks.filter((t) => t.outcome !== 'SUCCESS')).toEqual([]);
    expect(await attemptWorkers(ids)).toEqual({ 'fc-min-new': 60 });
    expect(ranOn('fc-min-old', ids).size).toBe(0);
    expect(ranOn('fc-min-new', ids).size).toBe(60);

    const old = await worker('fc-min-old');
    expect(old.health).toBe('healthy');
    expect(old.excluded['demo.echo']).toBe('version 1.9.3 is below min_version 1.10');
    // The rules are the type's: the old worker still takes the types that have none.
    expect(old.excluded['demo.sleep']).toBeNull();
    expect((await worker('fc-min-new')).excluded['demo.echo']).toBeNull();
  });

  it('gives no task to a blocked version; with every version blocked a task waits, then runs when unblocked', async () => {
    await startWorker('fc-blk-a', '2.4.0');
    await startWorker('fc-blk-b', '2.4.1');
    await healthy('fc-blk-a', 'fc-blk-b');
    await setRules('demo.echo', { blocked_versions: ['2.4.1', '2.5.0'] });

    const ids = await createTasks(60, 'blocked');
    await finished('blocked', 60);
    expect(await attemptWorkers(ids)).toEqual({ 'fc-blk-a': 60 });
    expect(ranOn('fc-blk-b', ids).size).toBe(0);
    expect((await worker('fc-blk-b')).excluded['demo.echo']).toBe(
      'version 2.4.1 is blocked (blocked_versions)',
    );

    await setRules('demo.echo', { blocked_versions: ['2.4.0', '2.4.1'] });
    const [waiting] = await createTasks(1, 'blocked-all');
    const postponed = await waits.eventually(
      async () => {
        const events = await api.events(waiting);
        return events.find((e) => e.to === 'POSTPONE');
      },
      60_000,
      'the task postponed for want of an allowed worker',
    );
    expect(postponed.reason).toMatch(/no demo\.echo worker that may take it has a free slot/);
    await waits.holds(
      async () =>
        (await task(waiting)).task_status !== 'FINISH' &&
        Object.keys(await attemptWorkers([waiting])).length === 0,
      3000,
      'no worker given the task while every version is blocked',
    );

    await setRules('demo.echo', null);
    expect((await finishedOne(waiting)).outcome).toBe('SUCCESS');
  });

  it('sends 15-25% of 1,000 tasks to the version a 20% ramp names, spread over the burst', async () => {
    await startWorker('fc-ramp-old', '3.0.0');
    await startWorker('fc-ramp-new', '3.1.0');
    await healthy('fc-ramp-old', 'fc-ramp-new');
    await setRules('demo.echo', { ramp: { version: '3.1.0', percent: 20 } });

    const ids = await createTasks(1000, 'ramp');
    const tasks = await finished('ramp', 1000, 300_000);
    expect(tasks.filter((t) => t.outcome !== 'SUCCESS')).toEqual([]);
    const onNew = ranOn('fc-ramp-new', ids);
    const onOld = ranOn('fc-ramp-old', ids);
    // Each task went to one side, by its id: the same as the hash says, barring a moved attempt.
    const asHashed = ids.filter((id) => rampBucket(id) < 20 === onNew.has(id)).length;
    const byBlock = [0, 250, 500, 750].map(
      (from) => ids.slice(from, from + 250).filter((id) => onNew.has(id)).length,
    );
    console.log(
      `20% ramp: ${onNew.size} of 1,000 tasks on the new version (${onOld.size} on the old); ` +
        `per 250 in creation order ${byBlock.join(', ')}; ${asHashed} on the side their hash names`,
    );
    expect(onNew.size + onOld.size).toBe(1000);
    expect(onNew.size).toBeGreaterThanOrEqual(150);
    expect(onNew.size).toBeLessThanOrEqual(250);
    // Not bursty: every quarter of the burst holds 10-30% for the new version.
    for (const n of byBlock) {
      expect(n).toBeGreaterThanOrEqual(25);
      expect(n).toBeLessThanOrEqual(75);
    }
    expect(asHashed).toBeGreaterThanOrEqual(990);
    // The task list says the same as the run logs.
    const listed = tasks.filter((t) => t.worker_id === 'fc-ramp-new').length;
    expect(listed).toBe(onNew.size);
  });

  it('drains a worker: its running task finishes there, new tasks go elsewhere or wait; undrain takes it back', async () => {
    const d1 = await startWorker('fc-drain-1', '4.0.0');
    await startWorker('fc-drain-2', '4.0.0');
    await healthy('fc-drain-1', 'fc-drain-2');

    const long = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'long', http_url: d1 },
      params: { seconds: 6, tick_ms: 200 },
    });
    const running = await waits.eventually(
      async () => {
        const t = await task(long);
        return t.task_status === 'RUNNING' ? t : undefined;
      },
      60_000,
      'the long task running',
    );
    expect(running.worker_id).toBe('fc-drain-1');

    const drained = await api.call<Worker>('POST', '/v1/workers/fc-drain-1/drain');
    expect(drained.status).toBe(200);
    expect(drained.data).toMatchObject({
      worker_id: 'fc-drain-1',
      draining: true,
      health: 'healthy',
      draining_since: expect.any(String),
    });
    expect(drained.data.excluded['demo.echo']).toMatch(/^draining since /);
    // Draining again keeps the time it started.
    const again = await api.call<Worker>('POST', '/v1/workers/fc-drain-1/drain');
    expect(again.data.draining_since).toBe(drained.data.draining_since);

    const after = [
      ...(await createTasks(30, 'after-drain')),
      ...(await createTasks(4, 'after-drain-sleep', 'demo.sleep', { seconds: 0.2, tick_ms: 50 })),
    ];
    await finished('after-drain', 30);
    await finished('after-drain-sleep', 4);
    expect(await attemptWorkers(after)).toEqual({ 'fc-drain-2': 34 });

    expect(await finishedOne(long)).toMatchObject({ outcome: 'SUCCESS', worker_id: 'fc-drain-1' });
    expect(await attemptWorkers([long])).toEqual({ 'fc-drain-1': 1 });
    expect([...ranOn('fc-drain-1', [long])]).toEqual([long]);
    expect(await worker('fc-drain-1')).toMatchObject({ draining: true, health: 'healthy' });

    // With no other worker, a new task waits for the drained one...
    await retire('fc-drain-2');
    const [waiting] = await createTasks(1, 'while-drained');
    await waits.eventually(
      async () => ((await task(waiting)).task_status === 'POSTPONE' ? true : undefined),
      60_000,
      'the task waiting for a worker',
    );
    await waits.holds(
      async () => (await task(waiting)).task_status === 'POSTPONE',
      3000,
      'the task waiting while its only worker drains',
    );

    // ...and undrain makes it eligible again.
    const undrained = await api.call<Worker>('DELETE', '/v1/workers/fc-drain-1/drain');
    expect(undrained.data).toMatchObject({ draining: false, draining_since: null });
    expect(undrained.data.excluded['demo.echo']).toBeNull();
    expect(await finishedOne(waiting)).toMatchObject({
      outcome: 'SUCCESS',
      worker_id: 'fc-drain-1',
    });

    const audit = await api.call<{ action: string; target: string }[]>(
      'GET',
      '/v1/audit?action=worker.drain',
    );
    expect(audit.data.map((e) => e.target)).toContain('fc-drain-1');
  });

  it('blacklists a worker by hand with a reason and an expiry; a restart keeps it; lifting takes it back', async () => {
    await startWorker('fc-bl-1', '5.0.0');
    await startWorker('fc-bl-2', '5.0.0');
    await healthy('fc-bl-1', 'fc-bl-2');
    const operator = new Api(
      api.base,
      (
        await api.call<{ key: string }>('POST', '/v1/api-keys', {
          name: 'fleet-operator',
          role: 'operator',
        })
      ).data.key,
    );
    const viewer = new Api(
      api.base,
      (
        await api.call<{ key: string }>('POST', '/v1/api-keys', {
          name: 'fleet-viewer',
          role: 'viewer',
        })
      ).data.key,
    );

    // Refusals, each in the envelope.
    const refused = [
      await viewer.call('POST', '/v1/workers/fc-bl-1/blacklist', { reason: 'x' }),
      await operator.call('POST', '/v1/workers/fc-nobody/blacklist', { reason: 'x' }),
      await operator.call('DELETE', '/v1/workers/fc-nobody/drain'),
      await operator.call('POST', '/v1/workers/fc-bl-1/blacklist', { reason: '' }),
      await operator.call('POST', '/v1/workers/fc-bl-1/blacklist', {
        reason: 'x',
        until: new Date(waits.now() - 60_000).toISOString(),
      }),
      await operator.call('POST', '/v1/workers/fc-bl-1/blacklist', {
        reason: 'x',
        until: 'tomorrow',
      }),
    ];
    expect(refused.map((r) => [r.status, r.code])).toEqual([
      [403, 40300],
      [404, 40402],
      [404, 40402],
      [400, 40000],
      [400, 40000],
      [400, 40000],
    ]);
    expect((await worker('fc-bl-1')).blacklist).toBeNull();

    const until = new Date(waits.now() + 3_600_000).toISOString();
    const set = await operator.call<Worker>('POST', '/v1/workers/fc-bl-1/blacklist', {
      reason: 'disk errors on /dev/sdb',
      until,
    });
    expect(set.status).toBe(200);
    expect(set.data).toMatchObject({
      health: 'blacklisted',
      blacklist: { reason: 'disk errors on /dev/sdb', until, since: expect.any(String) },
    });
    expect(set.data.excluded['demo.echo']).toBe(
      `blacklisted by hand until ${until}: disk errors on /dev/sdb`,
    );

    const ids = await createTasks(30, 'blacklisted');
    await finished('blacklisted', 30);
    expect(await attemptWorkers(ids)).toEqual({ 'fc-bl-2': 30 });

    // A restarted worker registers again: the blacklist stays.
    const before = (await worker('fc-bl-1')).blacklist;
    await baton.restartWorker('fc-bl-1', { WORKER_VERSION: '5.0.1' });
    await waits.eventually(
      async () => ((await worker('fc-bl-1')).version === '5.0.1' ? true : undefined),
      60_000,
      'fc-bl-1 registered again',
    );
    expect(await worker('fc-bl-1')).toMatchObject({ health: 'blacklisted', blacklist: before });

    const lifted = await operator.call<Worker>('DELETE', '/v1/workers/fc-bl-1/blacklist');
    expect(lifted.data).toMatchObject({ health: 'healthy', blacklist: null });
    const spread = await createTasks(40, 'lifted');
    await finished('lifted', 40);
    const counts = await attemptWorkers(spread);
    expect(counts['fc-bl-1']).toBeGreaterThan(0);
    expect(counts['fc-bl-1'] + counts['fc-bl-2']).toBe(40);

    // A blacklist that ends by itself: the worker is healthy again once its until has passed.
    const soon = new Date(waits.now() + 4000).toISOString();
    await operator.call('POST', '/v1/workers/fc-bl-1/blacklist', { reason: 'reboot', until: soon });
    expect((await worker('fc-bl-1')).health).toBe('blacklisted');
    const back = await waits.eventually(
      async () => {
        const w = await worker('fc-bl-1');
        return w.health === 'healthy' ? w : undefined;
      },
      60_000,
      'the blacklist to end at its until',
    );
    expect(back.blacklist).toBeNull();
    expect(waits.now()).toBeGreaterThanOrEqual(Date.parse(soon));
  });
});
