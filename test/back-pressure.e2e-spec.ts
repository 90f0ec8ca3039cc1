import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { SchedulerClient } from '@baton/scheduler-client';
import {
  Api,
  Backend,
  productionBackend,
  startScheduler,
  startTemplateWorker,
  ADMIN_KEY,
  AUTH,
} from './support/baton';
import { RunningProcess } from './support/processes';

jest.setTimeout(120_000);

/**
 * Past its in-flight limit the API answers 503 (code 50302) with Retry-After at once, having done
 * nothing, instead of letting requests queue until their clients give up; the client waits and
 * retries, and every task is made exactly once. On MariaDB: its calls wait on the network, so
 * requests overlap in the process (SQLite's synchronous writes answer them one at a time).
 */
describe('back-pressure', () => {
  let backend: Backend;
  let scheduler: RunningProcess;
  let worker: RunningProcess;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-pressure-'));
    backend = await productionBackend();
    scheduler = await startScheduler(backend, { BATON_API_MAX_IN_FLIGHT: '4' });
    worker = await startTemplateWorker('pressure-w1', scheduler.url, join(dir, 'runs.jsonl'));
    await new Api(scheduler.url).waitForWorkers(1, 20_000);
  });

  afterAll(async () => {
    await worker?.stop();
    await scheduler?.stop();
    rmSync(dir, { recursive: true, force: true });
    await backend?.cleanup();
  });

  const labelled = async (label: string): Promise<number> => {
    let n = 0;
    let cursor: string | null = null;
    do {
      const res = await request(
        `${scheduler.url}/v1/tasks?limit=500&label=${encodeURIComponent(`burst:${label}`)}${cursor ? `&cursor=${cursor}` : ''}`,
        { headers: AUTH },
      );
      const body = (await res.body.json()) as {
        data: { items: unknown[]; next_cursor: string | null };
      };
      n += body.data.items.length;
      cursor = body.data.next_cursor;
    } while (cursor);
    return n;
  };

  it('answers a burst over the limit 503 with Retry-After and creates nothing for those', async () => {
    const label = `raw-${Date.now()}`;
    const answers = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        const started = Date.now();
        const res = await request(`${scheduler.url}/v1/tasks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...AUTH },
          body: JSON.stringify({
            create_info: { task_type: 'demo.echo', task_name: `burst ${i}` },
            labels: { burst: label },
          }),
        });
        const body = (await res.body.json()) as { code: number; message: string };
        return {
          status: res.statusCode,
          code: body.code,
          retryAfter: res.headers['retry-after'],
          nosniff: res.headers['x-content-type-options'],
          ms: Date.now() - started,
        };
      }),
    );
    const refused = answers.filter((a) => a.status === 503);
    const created = answers.filter((a) => a.status === 201);
    expect(refused.length).toBeGreaterThan(0);
    expect(created.length + refused.length).toBe(300);
    for (const r of refused) {
      expect(r.code).toBe(50302);
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
      // The refusal carries the security headers as every answer does.
      expect(r.nosniff).toBe('nosniff');
    }
    // Only the admitted requests made tasks.
    expect(await labelled(label)).toBe(created.length);
    // Probes are never turned away.
    expect((await request(`${scheduler.url}/health/live`)).statusCode).toBe(200);
  });

  it('the client honours Retry-After and every task of the burst is made once', async () => {
    const label = `client-${Date.now()}`;
    let waits = 0;
    const baton = new SchedulerClient({
      apiKey: ADMIN_KEY,
      urls: [scheduler.url],
      maxTries: 30,
      onRetry: ({ error }) => {
        if (error.code === 50302) waits++;
      },
    });
    const tasks = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        baton.createTask({
          create_info: { task_type: 'demo.echo', task_name: `client burst ${i}` },
          labels: { burst: label },
        }),
      ),
    );
    expect(new Set(tasks.map((t) => t.task_id)).size).toBe(200);
    expect(waits).toBeGreaterThan(0);
    expect(await labelled(label)).toBe(200);
  });
});
