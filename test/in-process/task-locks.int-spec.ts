import Database from 'better-sqlite3';
import { join } from 'node:path';
import { Api } from '../support/baton';
import { InProcessBaton, startInProcess } from '../support/in-process';
import { Waits, manualTime } from '../support/waits';

/** Waits for end states, in clock time. */
const SETTLE_MS = 90_000;

interface TaskLock {
  key: string;
  held: boolean;
  held_by: 'lease' | 'task_state' | null;
  holder: string | null;
  holder_task_id: string | null;
  held_by_this_task: boolean;
  fence: number | null;
  expires_at: string | null;
}

const FREE = {
  held: false,
  held_by: null,
  holder: null,
  holder_task_id: null,
  held_by_this_task: false,
  fence: null,
  expires_at: null,
};

/**
 * `GET /v1/tasks/{task_id}/locks` through the scheduler and template worker in one process, on a
 * ManualClock: the lock backend is asked who holds each key, and the answer names the holding
 * task by the label its lease carries. On the embedded defaults (local locks); every other
 * driver's `inspect` is proven against its server by libs/locks/test/locks.inspect.int-spec.ts.
 */
describe.each([['embedded (local locks)']])('task locks: %s', () => {
  let baton: InProcessBaton;
  let waits: Waits;
  let api: Api;
  const run = Date.now().toString(36);

  const locks = async (id: string, as: Api = api): Promise<TaskLock[]> => {
    const res = await as.call<TaskLock[]>('GET', `/v1/tasks/${id}/locks`);
    expect([res.status, res.code]).toEqual([200, 0]);
    return res.data;
  };
  const until = (id: string, what: string, test: (t: Record<string, unknown>) => boolean) =>
    waits.eventually(
      async () => {
        const t = await api.task(id);
        return test(t) ? t : undefined;
      },
      SETTLE_MS,
      `task ${id}: ${what}`,
    );

  beforeAll(async () => {
    baton = await startInProcess({ BATON_INSTANCE_ID: `locks-${run}` });
    waits = manualTime(baton.clock);
    api = baton.api;
    await baton.addWorker('locks-worker');
    await waits.eventually(
      async () =>
        (await api.call<{ health: string }[]>('GET', '/v1/workers')).data.some(
          (w) => w.health === 'healthy',
        )
          ? true
          : undefined,
      60_000,
      'the worker healthy',
    );
  });

  afterAll(async () => {
    await baton?.stop();
  });

  it('shows the running task holding its key with a fence, a waiting task seeing it held, and the key free after', async () => {
    const key = `db-main-${run}`;
    const first = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'holds the key' },
      // Clock time: the clock stands still while the second task is looked at and paused.
      params: { seconds: 3, tick_ms: 250 },
      lock_keys: [key, `disk-${run}`],
    });
    const running = await until(first, 'running', (t) => t.task_status === 'RUNNING');
    const held = await locks(first);
    expect(held.map((l) => l.key)).toEqual([key, `disk-${run}`]);
    for (const l of held) {
      expect(l).toMatchObject({
        held: true,
        holder: `task ${first} on scheduler locks-${run}`,
        holder_task_id: first,
        held_by_this_task: true,
        fence: expect.any(Number),
      });
      // The lease is renewed at half its TTL (the task's lock_timeout, 60 s by default).
      const ahead = Date.parse(l.expires_at!) - waits.now();
      expect(ahead).toBeGreaterThan(0);
      expect(ahead).toBeLessThanOrEqual(60_000 + 1000);
    }
    expect(running.lock_keys).toEqual([key, `disk-${run}`]);

    const second = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'waits for the key' },
      params: { seconds: 1, tick_ms: 250 },
      lock_keys: [key],
    });
    // It comes due, finds the key taken, and waits.
    await waits.eventually(
      async () => {
        const events = await api.events(second);
        return events.some((e) => e.to === 'POSTPONE' && /lock key held/.test(e.reason))
          ? true
          : undefined;
      },
      SETTLE_MS,
      'the second task postponed on the held key',
    );
    // Told once: the checks that find the same holder count on one row, and the task says why.
    const told = await waits.eventually(
      async () => {
        const rows = (await api.events(second)).filter((e) => /lock key held/.test(e.reason));
        return rows.length === 1 && rows[0].repeats >= 3 ? rows : undefined;
      },
      SETTLE_MS,
      'the second task checked three times on one row',
    );
    expect(told[0]).toMatchObject({
      from: 'INIT',
      to: 'POSTPONE',
      reason: `lock key held by task ${first}: ${key}`,
    });
    const waiting = (await api.task(second)).waiting as Record<string, unknown>;
    expect(waiting).toMatchObject({
      reason: 'lock_key',
      message: `lock key held by task ${first}: ${key}`,
      since: told[0].at,
    });
    expect(Number(waiting.checks)).toBeGreaterThanOrEqual(told[0].repeats);
    const seen = await locks(second);
    expect(seen).toEqual([
      {
        key,
        held: true,
        held_by: 'lease',
        holder: `task ${first} on scheduler locks-${run}`,
        holder_task_id: first,
        held_by_this_task: false,
        fence: held[0].fence,
        expires_at: expect.any(String),
      },
    ]);
    // Paused, it cannot take the key the moment the first lets go: the key is seen free.
    const paused = await api.call('POST', `/v1/tasks/${second}/pause`, {});
    expect(paused.status).toBe(200);

    await until(first, 'finished', (t) => t.task_status === 'FINISH' && t.outcome === 'SUCCESS');
    await expect(locks(first)).resolves.toEqual(held.map((l) => ({ key: l.key, ...FREE })));
    await expect(locks(second)).resolves.toEqual([{ key, ...FREE }]);

    // Continued, the second takes the key with a higher fence, and frees it when done.
    const resumed = await api.call('POST', `/v1/tasks/${second}/continue`, {});
    expect(resumed.status).toBe(200);
    const mine = await waits.eventually(
      async () => {
        const [l] = await locks(second);
        return l.held_by_this_task ? l : undefined;
      },
      SETTLE_MS,
      'the second task holding the key',
    );
    expect(mine.fence).toBeGreaterThan(held[0].fence!);
    expect(mine.holder).toBe(`task ${second} on scheduler locks-${run}`);
    await until(second, 'finished', (t) => t.task_status === 'FINISH' && t.outcome === 'SUCCESS');
    await expect(locks(second)).resolves.toEqual([{ key, ...FREE }]);
  });

  it('answers an empty list for a task without lock keys, and 404 in the envelope for an unknown task', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'no keys' },
    });
    await expect(locks(id)).resolves.toEqual([]);
    const unknown = await api.call('GET', '/v1/tasks/01JDZ0000000000000000NOPE0/locks');
    expect(unknown.status).toBe(404);
    expect(unknown).toMatchObject({
      code: 40401,
      data: { task_id: '01JDZ0000000000000000NOPE0' },
    });
    expect(unknown.message).toEqual(expect.any(String));
  });

  it('keeps a tenant key to its tenant: another tenant’s holder is not named, its task not found', async () => {
    const made = async (name: string, tenant: string): Promise<Api> => {
      const res = await api.call<{ key: string }>('POST', '/v1/api-keys', {
        name: `${name}-${run}`,
        role: 'viewer',
        tenant,
      });
      expect(res.status).toBe(201);
      return new Api(api.base, res.data.key);
    };
    const alpha = await made('alpha', 'alpha');
    const beta = await made('beta', 'beta');
    const key = `shared-${run}`;
    const holder = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'alpha holds' },
      params: { seconds: 3, tick_ms: 250 },
      tenant: 'alpha',
      lock_keys: [key],
    });
    await until(holder, 'running', (t) => t.task_status === 'RUNNING');
    const waiter = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'beta waits' },
      tenant: 'beta',
      lock_keys: [key],
    });
    const [asBeta] = await locks(waiter, beta);
    expect(asBeta).toMatchObject({
      held: true,
      holder: 'a task of another tenant',
      holder_task_id: null,
      held_by_this_task: false,
      fence: expect.any(Number),
    });
    // An admin key spans every tenant and is told which task it is.
    await expect(locks(waiter)).resolves.toMatchObject([{ holder_task_id: holder }]);
    await expect(locks(holder, alpha)).resolves.toMatchObject([
      { held_by_this_task: true, holder_task_id: holder },
    ]);
    const foreign = await beta.call('GET', `/v1/tasks/${holder}/locks`);
    expect([foreign.status, foreign.code]).toEqual([404, 40401]);
    // The waiting task's log names the holder as the view does: not which task of another tenant.
    const told = (await api.events(waiter)).filter((e) => /lock key held/.test(e.reason));
    for (const e of told)
      expect(e.reason).toBe(`lock key held by a task of another tenant: ${key}`);
    await until(waiter, 'finished', (t) => t.task_status === 'FINISH');
  });

  it('holds no key for a task that has not started: one created paused keeps no task of another tenant waiting', async () => {
    const key = `paused-${run}`;
    const paused = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'created paused' },
      process_arg: { task_status: 'PAUSE' },
      tenant: 'alpha',
      lock_keys: [key],
    });
    const other = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'takes the key' },
      tenant: 'beta',
      lock_keys: [key],
    });
    await until(other, 'finished', (t) => t.task_status === 'FINISH' && t.outcome === 'SUCCESS');
    const events = await api.events(other);
    expect(events.filter((e) => /lock key held/.test(e.reason))).toEqual([]);
    expect((await api.task(paused)).task_status).toBe('PAUSE');
    await expect(locks(paused)).resolves.toEqual([{ key, ...FREE }]);
    // Continued, it starts an attempt and takes the key like any other.
    expect((await api.call('POST', `/v1/tasks/${paused}/continue`, {})).status).toBe(200);
    await until(paused, 'finished', (t) => t.task_status === 'FINISH' && t.outcome === 'SUCCESS');
  });

  it('shows a key held by a running task whose lease went with its scheduler, as the engine acts on it', async () => {
    const key = `state-${run}`;
    const holder = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'runs on past a restart' },
      params: { seconds: 4, tick_ms: 250 },
      tenant: 'alpha',
      lock_keys: [key],
    });
    await until(holder, 'running', (t) => t.task_status === 'RUNNING');
    // The local lock backend lives in the scheduler's process: its leases go with it, while the
    // task runs on at its worker.
    await baton.stopScheduler();
    await baton.startScheduler();
    const waiter = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'waits for the state' },
      tenant: 'alpha',
      lock_keys: [key],
    });
    const reason = await waits.eventually(
      async () => (await api.events(waiter)).find((e) => /lock key held/.test(e.reason))?.reason,
      SETTLE_MS,
      'the waiter postponed on the key',
    );
    expect(reason).toBe(`lock key held by task ${holder}: ${key}`);
    const [seen] = await locks(waiter);
    expect(seen).toMatchObject({
      key,
      held: true,
      holder_task_id: holder,
      held_by_this_task: false,
    });
    // No lease: the view names the task whose state holds the key, as the engine waits for it.
    expect(seen).toMatchObject({ held_by: 'task_state', holder: `task ${holder}`, fence: null });
    await until(holder, 'finished', (t) => t.task_status === 'FINISH' && t.outcome === 'SUCCESS');
    await until(waiter, 'finished', (t) => t.task_status === 'FINISH' && t.outcome === 'SUCCESS');
  });
  it('keeps a key from other tasks while a live worker is owed the drop of an attempt given up with it', async () => {
    const key = `owed-${run}`;
    // A task whose attempt 1 was given up while its worker may still run it: it waits (its first
    // start a day ahead), and the drop is owed to the live worker. Written as the engine writes it.
    const given = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'its attempt was given up' },
      process_arg: { start_time: new Date(waits.now() + 86_400_000).toISOString() },
      lock_keys: [key],
    });
    const [worker] = (await api.call<{ worker_id: string; url: string }[]>('GET', '/v1/workers'))
      .data;
    const file = new Database(join(baton.dir, 'baton.sqlite'), { timeout: 10_000 });
    const owe = (dropDueAt: number | null): void => {
      file
        .prepare('UPDATE baton_task_attempt SET drop_due_at = ? WHERE task_id = ?')
        .run(dropDueAt, given);
    };
    try {
      file
        .prepare(
          'INSERT INTO baton_task_attempt (task_id, attempt, worker_id, worker_url, fence, started_at, ended_at, outcome, error, drop_due_at, drop_tries) VALUES (?, 1, ?, ?, 1, ?, ?, ?, ?, ?, 0)',
        )
        .run(
          given,
          worker.worker_id,
          worker.url,
          waits.now(),
          waits.now(),
          'POSTPONE',
          'given up',
          waits.now() + 86_400_000,
        );
      const waiter = await api.create({
        create_info: { task_type: 'demo.echo', task_name: 'waits for the drop' },
        lock_keys: [key],
      });
      const reason = await waits.eventually(
        async () => (await api.events(waiter)).find((e) => /lock key held/.test(e.reason))?.reason,
        SETTLE_MS,
        'the waiter postponed on the key',
      );
      expect(reason).toBe(`lock key held by task ${given}: ${key}`);
      expect((await locks(waiter))[0]).toMatchObject({
        held: true,
        held_by: 'task_state',
        holder_task_id: given,
      });
      // The worker was told: the key is free, and the waiter runs.
      owe(null);
      await until(waiter, 'finished', (t) => t.task_status === 'FINISH' && t.outcome === 'SUCCESS');
    } finally {
      file.close();
    }
  });
});
