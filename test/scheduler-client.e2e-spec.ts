import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BatonApiError,
  BatonConflictError,
  BatonNotFoundError,
  BatonUnavailableError,
  BatonValidationError,
  SchedulerClient,
} from '@baton/scheduler-client';
import {
  Backend,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
  ADMIN_KEY,
} from './support/baton';
import { ROOT, RunningProcess, eventually } from './support/processes';

jest.setTimeout(120_000);

/** A port nothing listens on (bound, then closed). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

describe('scheduler client against a running scheduler', () => {
  let backend: Backend;
  let scheduler: RunningProcess;
  let worker: RunningProcess;
  let dir: string;
  let dead: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-client-'));
    backend = embeddedBackend();
    scheduler = await startScheduler(backend);
    worker = await startTemplateWorker('client-w1', scheduler.url, join(dir, 'runs.jsonl'));
    dead = `http://127.0.0.1:${await closedPort()}`;
    const baton = new SchedulerClient({ apiKey: ADMIN_KEY, urls: [scheduler.url] });
    await eventually(
      async () =>
        (await baton.listWorkers()).some((w) => w.health === 'healthy') ? true : undefined,
      10_000,
      'a healthy worker',
    ).catch(() => undefined);
  });

  afterAll(async () => {
    await worker?.stop();
    await scheduler?.stop();
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fails over from an instance that refuses connections and runs a task to FINISH', async () => {
    const retried: BatonApiError[] = [];
    const baton = new SchedulerClient({
      apiKey: ADMIN_KEY,
      urls: [dead, scheduler.url],
      onRetry: ({ error }) => retried.push(error),
    });
    const task = await baton.createTask({
      create_info: { task_type: 'demo.echo', task_name: 'client failover' },
      params: { hello: 'world' },
    });
    const done = await baton.waitForTask(task.task_id, ['FINISH'], { timeoutMs: 30_000 });
    expect(done.outcome).toBe('SUCCESS');
    // The first call went to the dead instance and moved on; later calls skip it for a while.
    expect(retried.length).toBeGreaterThanOrEqual(1);
    expect(retried[0]).toBeInstanceOf(BatonUnavailableError);
    expect(retried[0].url).toBe(dead);
    const events = await baton.events(task.task_id);
    expect(events.map((e) => e.to)).toContain('SUCCESS');
  });

  it('sends a retry to an instance not known to be down, not simply to the next in line', async () => {
    // A: a stand-in instance that answers, then dies; B: dead from the start; C: the scheduler.
    const a = createHttpServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ code: 0, message: 'ok', data: [] }));
    });
    await new Promise<void>((resolve) => a.listen(0, '127.0.0.1', resolve));
    const aUrl = `http://127.0.0.1:${(a.address() as { port: number }).port}`;
    const retried: string[] = [];
    const baton = new SchedulerClient({
      apiKey: ADMIN_KEY,
      urls: [aUrl, dead, scheduler.url],
      // Long enough that no instance that failed comes back into rotation during the test.
      downMs: 60_000,
      onRetry: ({ url }) => retried.push(url),
    });
    await baton.listWorkers(); // starts at A: answered
    await baton.listWorkers(); // starts at B: refused, then C
    await new Promise<void>((resolve) => a.close(() => resolve()));
    await baton.listWorkers(); // starts at C
    await baton.listWorkers(); // starts at A, now dead: the retry skips B (known down) for C
    expect(retried).toEqual([dead, aUrl]);
  });

  it('a create sent again under the same key answers the same task', async () => {
    const baton = new SchedulerClient({ apiKey: ADMIN_KEY, urls: [scheduler.url] });
    const body = { create_info: { task_type: 'demo.echo', task_name: 'keyed' }, params: { k: 1 } };
    const a = await baton.createTask(body, { idempotencyKey: 'client-e2e-key-1' });
    const b = await baton.createTask(body, { idempotencyKey: 'client-e2e-key-1' });
    expect(b.task_id).toBe(a.task_id);
    // Without a key of the caller's, each call is a task of its own.
    const c = await baton.createTask(body);
    expect(c.task_id).not.toBe(a.task_id);
  });

  it('drains, blacklists and restores a worker', async () => {
    const baton = new SchedulerClient({ apiKey: ADMIN_KEY, urls: [scheduler.url] });
    const drained = await baton.drainWorker('client-w1');
    expect(drained).toMatchObject({ worker_id: 'client-w1', draining: true });
    // Sent again (as the client may on a lost answer), the same state.
    expect((await baton.drainWorker('client-w1')).draining).toBe(true);
    expect((await baton.drainWorker('client-w1', false)).draining).toBe(false);
    const listed = await baton.blacklistWorker('client-w1', 'disk replaced tonight');
    expect(listed.blacklist).toMatchObject({ reason: 'disk replaced tonight' });
    expect(listed.health).toBe('blacklisted');
    const lifted = await baton.unblacklistWorker('client-w1');
    expect(lifted.blacklist ?? null).toBeNull();
    expect(lifted.health).toBe('healthy');
    await expect(baton.drainWorker('no-such-worker')).rejects.toMatchObject({ httpStatus: 404 });
  });

  it('a batch create gives each task a key, so sending it again makes no task twice', async () => {
    const baton = new SchedulerClient({ apiKey: ADMIN_KEY, urls: [scheduler.url] });
    const tasks = [1, 2, 3].map((i) => ({
      create_info: { task_type: 'demo.echo', task_name: `batch ${i}` },
      idempotency_key: `client-e2e-batch-${i}`,
    }));
    const first = await baton.createTasks({ tasks });
    const again = await baton.createTasks({ tasks });
    expect(again.map((t) => t.task_id)).toEqual(first.map((t) => t.task_id));
  });

  it('answers the envelope as typed errors, and does not retry what cannot succeed', async () => {
    const retried: BatonApiError[] = [];
    const baton = new SchedulerClient({
      apiKey: ADMIN_KEY,
      urls: [scheduler.url],
      onRetry: ({ error }) => retried.push(error),
    });
    const missing = await baton.getTask('no-such-task').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(BatonNotFoundError);
    expect((missing as BatonApiError).httpStatus).toBe(404);
    expect(Math.floor((missing as BatonApiError).code / 100)).toBe(404);

    const invalid = await baton
      .createTask({ create_info: { task_type: '', task_name: 'x' } } as never)
      .catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(BatonValidationError);
    expect((invalid as BatonApiError).message).toMatch(/task_type/);

    const task = await baton.createTask({
      create_info: { task_type: 'demo.echo', task_name: 'finished' },
    });
    await baton.waitForTask(task.task_id, ['FINISH'], { timeoutMs: 30_000 });
    const late = await baton.pause(task.task_id).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(BatonConflictError);
    expect(retried).toEqual([]);
  });

  it('gives up with BatonUnavailableError when no instance answers', async () => {
    const baton = new SchedulerClient({
      apiKey: ADMIN_KEY,
      urls: [dead],
      maxTries: 3,
      backoffMs: 10,
    });
    const err = await baton.listTasks().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BatonUnavailableError);
    expect((err as BatonApiError).message).toMatch(/ECONNREFUSED/);
  });

  it('builds, packs and installs as a package that plain Node.js uses', async () => {
    // What `npx tsc -p tsconfig.json && npm pack` does in libs/scheduler-client, in a scratch copy.
    const pkg = join(dir, 'pkg');
    const lib = join(ROOT, 'libs', 'scheduler-client');
    execFileSync(
      process.execPath,
      [
        join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
        '-p',
        join(lib, 'tsconfig.json'),
        '--outDir',
        join(pkg, 'dist'),
      ],
      { cwd: ROOT, stdio: 'pipe' },
    );
    for (const f of ['package.json', 'README.md']) cpSync(join(lib, f), join(pkg, f));
    execFileSync('npm', ['pack', '--silent'], { cwd: pkg, stdio: 'pipe' });
    const tarball = readdirSync(pkg).find((f) => f.endsWith('.tgz'));
    expect(tarball).toBeDefined();
    cpSync(join(pkg, tarball!), join(dir, tarball!));
    rmSync(pkg, { recursive: true, force: true });
    writeFileSync(join(dir, 'package.json'), '{"name":"client-user","private":true}');
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', join(dir, tarball!)], {
      cwd: dir,
      stdio: 'pipe',
    });
    const script = `
      const { SchedulerClient, BatonNotFoundError } = require('@baton/scheduler-client');
      (async () => {
        const baton = new SchedulerClient({ urls: [process.argv[1], process.argv[2]], apiKey: process.argv[3] });
        const t = await baton.createTask({ create_info: { task_type: 'demo.echo', task_name: 'from the package' } });
        const done = await baton.waitForTask(t.task_id, ['FINISH'], { timeoutMs: 30000 });
        const missing = await baton.getTask('nope').catch((e) => e instanceof BatonNotFoundError);
        console.log(JSON.stringify({ outcome: done.outcome, missing }));
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const out = execFileSync(process.execPath, ['-e', script, dead, scheduler.url, ADMIN_KEY], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(JSON.parse(out.trim())).toEqual({ outcome: 'SUCCESS', missing: true });
  });
});
