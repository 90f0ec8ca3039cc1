import { systemClock } from '@baton/time';
import { BlockingKind, ContractErrorCode } from '@baton/task-contract';
import { DataSource } from 'typeorm';
import { Clock } from '../common';
import { loadSchedulerConfig } from '../config';
import { TransactionRunner, createDataSource } from '../database';
import {
  TestDatabase,
  mysqlTestDatabase,
  sqliteTestDatabase,
} from '../database/testing/test-databases';
import { ENTITIES } from '../entities';
import { TaskTypesService, rampBucket } from '../task-types';
import { taskTypesStack } from '../task-types/testing/save-task-type';
import { RegisterWorkerDto } from './dto/worker.dto';
import { WorkerControl } from './worker-control';
import { WorkerHealthWatch } from './worker-health-watch';
import { WorkersRepository } from './workers.repository';
import { WorkersService } from './workers.service';
import { Metrics } from '../metrics';

class HeldClock extends Clock {
  t = Date.UTC(2026, 0, 1);
  override now(): number {
    return this.t;
  }
}

const TYPE = 'fleet.job';

const registration = (workerId: string, version: string): RegisterWorkerDto => ({
  worker_id: workerId,
  url: `http://${workerId}:3100`,
  version,
  contract_version: '1.2.0',
  capacity: 4,
  task_types: [{ task_type: TYPE, blocking: BlockingKind.SYNC, implements: [] }],
});

/** A task id the ramp puts inside (or outside) its first `percent` buckets. */
function taskIn(inside: boolean, percent: number): string {
  for (let i = 0; ; i++) if (rampBucket(`task-${i}`) < percent === inside) return `task-${i}`;
}

/**
 * The fleet's controls on the real databases: version rules and the ramp in the pick, a drain
 * and a blacklist by hand that a registration does not undo, and a blacklist by hand as the
 * health watch (and its `worker.unhealthy`) sees it.
 */
describe.each([
  ['sqlite', async () => sqliteTestDatabase()],
  ['mysql', mysqlTestDatabase],
])('worker fleet control on %s', (_name, make: () => Promise<TestDatabase>) => {
  let testDb: TestDatabase;
  let ds: DataSource;
  let clock: HeldClock;
  let types: TaskTypesService;
  let workers: WorkersService;
  let control: WorkerControl;
  let watch: WorkerHealthWatch;
  let metrics: Metrics;

  beforeAll(async () => {
    testDb = await make();
    ds = createDataSource(testDb.config, ENTITIES);
    await ds.initialize();
    await ds.runMigrations();
  });

  afterAll(async () => {
    await ds?.destroy();
    await testDb?.drop();
  });

  beforeEach(async () => {
    await ds.query('DELETE FROM baton_worker');
    await ds.query('DELETE FROM baton_task_type');
    clock = new HeldClock();
    const config = loadSchedulerConfig({ BATON_AUTH_MODE: 'none' });
    const repo = new WorkersRepository(ds);
    types = new TaskTypesService(taskTypesStack(ds).repo, clock);
    metrics = new Metrics();
    workers = new WorkersService(repo, types, clock, config, metrics);
    control = new WorkerControl(repo, workers, clock);
    watch = new WorkerHealthWatch(new TransactionRunner(ds, systemClock), clock, config);
    await workers.register(registration('old', '1.0.0'));
    await workers.register(registration('new', '1.1.0'));
  });

  const picked = async (taskId = 'task-x'): Promise<string | undefined> => {
    workers.forget();
    return (await workers.pick(TYPE, { taskId }))?.workerId;
  };

  it('gives no new task to a version below min_version or blocked, and says why', async () => {
    await types.update(TYPE, { worker_rules: { min_version: '1.1' } });
    for (let i = 0; i < 5; i++) expect(await picked(`t${i}`)).toBe('new');
    const view = (await workers.list()).find((v) => v.worker.workerId === 'old');
    expect(view?.excluded).toEqual({ [TYPE]: 'version 1.0.0 is below min_version 1.1' });

    await types.update(TYPE, { worker_rules: { blocked_versions: ['1.1.0'] } });
    for (let i = 0; i < 5; i++) expect(await picked(`t${i}`)).toBe('old');
    expect((await workers.get('new')).excluded).toEqual({
      [TYPE]: 'version 1.1.0 is blocked (blocked_versions)',
    });
    expect((await workers.get('old')).excluded).toEqual({ [TYPE]: null });
  });

  it('refuses rules that ramp to a version they keep out', async () => {
    await expect(
      types.update(TYPE, {
        worker_rules: { min_version: '2.0', ramp: { version: '1.1.0', percent: 10 } },
      }),
    ).rejects.toMatchObject({ code: ContractErrorCode.VALIDATION_FAILED });
    expect((await types.get(TYPE)).workerRules).toBeNull();
  });

  it("sends a task to the ramp's version by its bucket, and lets a pinned url ignore the ramp", async () => {
    await types.update(TYPE, { worker_rules: { ramp: { version: '1.1', percent: 30 } } });
    expect((await types.get(TYPE)).workerRules).toEqual({
      minVersion: null,
      blockedVersions: [],
      ramp: { version: '1.1', percent: 30 },
    });
    expect(await picked(taskIn(true, 30))).toBe('new');
    expect(await picked(taskIn(false, 30))).toBe('old');
    const pinned = await workers.pick(TYPE, { taskId: taskIn(true, 30), url: 'http://old:3100/' });
    expect(pinned?.workerId).toBe('old');
    // With the old version gone, the ramp holds nothing back.
    await workers.remove('old');
    expect(await picked(taskIn(false, 30))).toBe('new');
  });

  it('keeps a drain and a blacklist by hand when the worker registers again or heartbeats', async () => {
    await control.drain('old');
    clock.t += 1000;
    await control.blacklist('new', 'bad disk', null);
    await workers.register(registration('old', '1.0.0'));
    await workers.register(registration('new', '1.1.0'));
    await workers.heartbeat('old');
    await workers.heartbeat('new');
    const old = await workers.get('old');
    expect(old.worker.drainingSince).toBe(clock.t - 1000);
    expect(old.health).toBe('healthy');
    expect(old.excluded[TYPE]).toBe('draining since 2026-01-01T00:00:00.000Z');
    const fresh = await workers.get('new');
    expect(fresh.health).toBe('blacklisted');
    expect(fresh.worker.manualBlacklist).toEqual({
      reason: 'bad disk',
      since: clock.t,
      until: null,
    });
    expect(fresh.excluded[TYPE]).toBe('blacklisted by hand: bad disk');
    expect(await picked()).toBeUndefined();

    // A drained worker's bound attempt goes on there; a blacklisted worker's does not.
    expect((await workers.pickBound(TYPE, 'http://old:3100'))?.workerId).toBe('old');
    expect(await workers.pickBound(TYPE, 'http://new:3100')).toBeUndefined();

    await control.undrain('old');
    expect(await picked()).toBe('old');
    await control.lift('new');
    expect((await workers.get('new')).worker.manualBlacklist).toBeNull();
  });

  it('ends a blacklist by hand at its until, and refuses an until in the past', async () => {
    await control.blacklist('new', 'maintenance', clock.t + 60_000);
    await control.blacklist('old', 'maintenance', clock.t + 60_000);
    expect((await workers.get('new')).excluded[TYPE]).toBe(
      'blacklisted by hand until 2026-01-01T00:01:00.000Z: maintenance',
    );
    expect(await picked()).toBeUndefined();
    clock.t += 60_001;
    await workers.heartbeat('new');
    expect(await picked()).toBe('new');
    await expect(control.blacklist('new', 'late', clock.t - 1)).rejects.toMatchObject({
      code: ContractErrorCode.VALIDATION_FAILED,
    });
  });

  it('answers 404 for a worker that is not registered', async () => {
    for (const act of [
      () => control.drain('nobody'),
      () => control.undrain('nobody'),
      () => control.blacklist('nobody', 'x', null),
      () => control.lift('nobody'),
    ])
      await expect(act()).rejects.toMatchObject({ code: ContractErrorCode.NOT_FOUND });
  });

  it('lifts a blacklist after call failures as well', async () => {
    const config = loadSchedulerConfig({ BATON_AUTH_MODE: 'none' });
    for (let i = 0; i < config.workers.blacklistAfter; i++) await workers.reportFailure('new');
    expect((await workers.get('new')).health).toBe('blacklisted');
    await control.lift('new');
    const after = await workers.get('new');
    expect(after.health).toBe('healthy');
    expect(after.worker.blacklistedUntil).toBeNull();
  });

  it('tells the health watch of a blacklist by hand once, and of nothing once it is lifted', async () => {
    await control.blacklist('old', 'bad disk', null);
    const events = await watch.passOnce();
    expect(events.map((e) => [e.worker.worker_id, e.worker.health, e.worker.blacklist])).toEqual([
      ['old', 'blacklisted', { reason: 'bad disk', since: expect.any(String), until: null }],
    ]);
    expect(events[0].worker.excluded).toEqual({ [TYPE]: 'blacklisted by hand: bad disk' });
    expect(await watch.passOnce()).toEqual([]);
    await control.lift('old');
    expect(await watch.passOnce()).toEqual([]);
    const [row] = (await ds.query(
      "SELECT unhealthy_since FROM baton_worker WHERE worker_id = 'old'",
    )) as { unhealthy_since: unknown }[];
    expect(row.unhealthy_since).toBeNull();
    // A drain is not ill health.
    await control.drain('new');
    expect(await watch.passOnce()).toEqual([]);
  });

  it('refuses a worker of an older contract than its minimum, says why, counts it, and records the version of one it takes', async () => {
    const refused = (dto: RegisterWorkerDto) =>
      workers.register(dto).then(
        () => undefined,
        (err: { code?: number; message?: string; data?: unknown }) => err,
      );
    const older = await refused({ ...registration('w-1-0', '1.0.0'), contract_version: '1.0.0' });
    expect(older).toMatchObject({
      code: ContractErrorCode.CONTRACT_VERSION_UNSUPPORTED,
      data: { contract_version: '1.0.0', min_contract_version: '1.1.0' },
    });
    expect(older?.message).toMatch(
      /speaks worker contract 1\.0\.0; this scheduler accepts 1\.1\.0 or later \(BATON_MIN_WORKER_CONTRACT\)/,
    );
    const { contract_version: _none, ...unnamed } = registration('w-none', '1.0.0');
    expect(await refused(unnamed)).toMatchObject({
      message: expect.stringMatching(/names no contract_version/),
    });
    await expect(workers.get('w-1-0')).rejects.toMatchObject({ code: ContractErrorCode.NOT_FOUND });
    expect(
      metrics.get('baton_worker_registrations_refused_total', { reason: 'contract_version' }),
    ).toBe(2);
    expect((await workers.get('new')).worker.contractVersion).toBe('1.2.0');

    // An operator who accepts 1.0.0 knowingly gets it, recorded as such.
    const lenient = new WorkersService(
      new WorkersRepository(ds),
      types,
      clock,
      loadSchedulerConfig({ BATON_AUTH_MODE: 'none', BATON_MIN_WORKER_CONTRACT: '1.0.0' }),
      metrics,
    );
    expect((await lenient.register(unnamed)).worker.contractVersion).toBe('1.0.0');
  });
});
