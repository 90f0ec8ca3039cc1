import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Api,
  Backend,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually, schedule } from './support/processes';
import { request } from 'undici';

jest.setTimeout(180_000);

/** An HTTP proxy to the worker that, while `holdRuns`, holds run answers until the caller gives up. */
interface HoldingProxy {
  url: string;
  target: string;
  holdRuns: boolean;
  /** Run answers held so far. */
  held: number;
  close(): Promise<void>;
}

async function startProxy(): Promise<HoldingProxy> {
  const state = { target: '', holdRuns: false, held: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const headers = { ...req.headers };
        delete headers.host;
        delete headers.connection;
        const answer = await request(`${state.target}${req.url ?? '/'}`, {
          method: req.method as 'GET',
          headers,
          body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
        });
        const body = Buffer.from(await answer.body.arrayBuffer());
        if (state.holdRuns && req.method === 'POST' && /action=running/.test(req.url ?? '')) {
          state.held++;
          // Held until the scheduler has given up on it (it closes the connection).
          await new Promise<void>((r) => res.once('close', () => r()));
          return;
        }
        res.writeHead(answer.statusCode, answer.headers as Record<string, string>);
        res.end(body);
      })().catch(() => res.destroy());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  });
}

interface RunLine {
  event: 'start' | 'end';
  task_id: string;
  attempt: number;
  outcome?: string;
}

/**
 * A worker call whose answer did not come back in time has an unknown outcome, not a failed one:
 * work that succeeded is recorded SUCCESS, whether the scheduler stalled past its call timeout
 * while the answer waited in its socket, or the worker itself answered late.
 */
describe('an outcome that did not come back in time', () => {
  let backend: Backend;
  let dir: string;
  let scheduler: RunningProcess;
  let worker: RunningProcess;
  let api: Api;
  const procs: RunningProcess[] = [];
  let proxy: HoldingProxy;

  const runLog = (): RunLine[] => {
    const file = join(dir, 'w.jsonl');
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as RunLine);
  };
  const ended = (id: string): Promise<RunLine> =>
    eventually(
      async () => runLog().find((l) => l.task_id === id && l.event === 'end'),
      60_000,
      `the worker's run of ${id} ended`,
    );

  beforeAll(async () => {
    backend = embeddedBackend();
    dir = mkdtempSync(join(tmpdir(), 'baton-unknown-'));
    // The worker stays healthy in the scheduler's eyes across the stalls (its beats stop
    // reaching a stopped scheduler): what is tested is the task, not the worker's health.
    scheduler = await startScheduler(backend, {
      BATON_INSTANCE_ID: 'stall-1',
      BATON_WORKER_STALE_MS: '600000',
    });
    procs.push(scheduler);
    api = new Api(scheduler.url);
    // Reached through a proxy that can hold the answers of run calls.
    proxy = await startProxy();
    worker = await startTemplateWorker('stall-w', scheduler.url, join(dir, 'w.jsonl'), {
      WORKER_PUBLIC_URL: proxy.url,
    });
    proxy.target = worker.url;
    procs.push(worker);
    await api.waitForWorkers(1, 60_000);
  });

  afterAll(async () => {
    for (const p of procs) p.proc.kill('SIGCONT');
    await Promise.all(procs.map((p) => p.stop()));
    await proxy?.close();
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('records SUCCESS when the scheduler was stopped past its call timeout while the worker finished', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.flaky', task_name: 'stalled scheduler' },
      // A sync run of 2 s under a 4 s call timeout (its deadline), no retry to hide a failure.
      params: { fail_times: 0, delay_ms: 2000 },
      process_arg: { deadline_second: 4, max_retry: 0 },
    });
    await api.until(id, 'RUNNING', 60_000);
    const stop = schedule();
    scheduler.proc.kill('SIGSTOP');
    const end = await ended(id);
    expect(end.outcome).toBe('SUCCESS');
    // Stopped past the call's deadline: its timer is overdue when the scheduler runs again, and
    // the answer has been waiting in the socket since the run ended.
    await stop.at(9000);
    scheduler.proc.kill('SIGCONT');
    const done = await api.until(id, 'FINISH', 90_000);
    expect(done.outcome).toBe('SUCCESS');
    expect(await api.sequence(id)).not.toContain('FAIL');
  });

  it('records SUCCESS when the worker answered after the call timed out', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.flaky', task_name: 'late answer' },
      params: { fail_times: 0, delay_ms: 500 },
      process_arg: { deadline_second: 4, max_retry: 0 },
    });
    // The worker ends the run at once; its answer is held on the way back past the call's
    // deadline (a slow network, a stalled proxy): the call times out with the work done.
    proxy.holdRuns = true;
    try {
      const end = await ended(id);
      expect(end.outcome).toBe('SUCCESS');
      await eventually(
        async () =>
          (await api.events(id)).some((e) => /the outcome is unknown/.test(e.reason))
            ? true
            : undefined,
        60_000,
        'the scheduler noting an unknown outcome',
      );
    } finally {
      proxy.holdRuns = false;
    }
    const done = await api.until(id, 'FINISH', 90_000);
    expect(done.outcome).toBe('SUCCESS');
    expect(await api.sequence(id)).not.toContain('FAIL');
    expect(proxy.held).toBeGreaterThanOrEqual(1);
  });
});
