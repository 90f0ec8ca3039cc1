import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection, createConnection } from 'mysql2/promise';
import { BatonApiError, SchedulerClient } from '@baton/scheduler-client';
import { findOverlaps, readRunLogs } from '../apps/worker-template/src/run-log/run-log-analysis';
import {
  Backend,
  productionBackend,
  startFleet,
  startTemplateWorker,
  ADMIN_KEY,
  AUTH,
} from './support/baton';
import { RunningProcess, eventually, schedule } from './support/processes';

jest.setTimeout(600_000);

/**
 * Creates a second. Three schedulers, two workers and this client share two cores: at 100 a
 * second a slow day's box had no headroom left before the deploy (create to finish p50 6-11 s,
 * on the code of the previous stop as on this one), and the backlog one restart adds is then a
 * measure of the box, not of the deploy. At 40 the deploy is what the delay shows.
 */
const RATE = 40;
/** Creates waiting for their answer at most (what the client has in flight). */
const IN_FLIGHT = 16;

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

/**
 * A deploy: three schedulers on MariaDB + Redis restarted one by one with SIGTERM (what
 * Kubernetes sends) while a client submits RATE tasks a second through `SchedulerClient`, which
 * knows the three URLs. No create fails, every task finishes, none runs twice at once, and no
 * task is left claimed by a stopped scheduler (it would wait until its claim lease lapsed).
 */
describe('rolling restart under load', () => {
  let backend: Backend;
  let dir: string;
  const procs = new Set<RunningProcess>();
  let db: Connection | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-rolling-'));
    backend = await productionBackend();
  });

  afterAll(async () => {
    await Promise.all([...procs].map((p) => p.stop()));
    await db?.end();
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('three schedulers restarted one by one: no client error, every task finishes, none left waiting for a lapsed claim', async () => {
    const { schedulers, urls, start } = await startFleet(backend, 3, 'roll', procs);
    const logs = [join(dir, 'w1.jsonl'), join(dir, 'w2.jsonl')];
    for (const [k, log] of logs.entries()) {
      // The workers know every instance: their heartbeats and reports go on while one restarts.
      const w = await startTemplateWorker(`roll-w${k + 1}`, urls.join(','), log, {
        WORKER_CAPACITY: '256',
      });
      procs.add(w);
    }
    const client = new SchedulerClient({ apiKey: ADMIN_KEY, urls, timeoutMs: 5000, maxTries: 12 });
    await eventually(
      async () =>
        (await client.listTasks({ limit: 1 })) &&
        (
          (await fetch(`${urls[0]}/v1/workers`, { headers: AUTH }).then((r) => r.json())) as {
            data: unknown[];
          }
        ).data.length >= 2
          ? true
          : undefined,
      20_000,
      'two workers registered',
    );

    // RATE creates a second, each on its own (not one after the other), until told to stop.
    const errors: string[] = [];
    const created: { id: string; at: number }[] = [];
    let retries = 0;
    const counting = new SchedulerClient({
      apiKey: ADMIN_KEY,
      urls,
      timeoutMs: 15_000,
      maxTries: 12,
      onRetry: () => retries++,
    });
    let loading = true;
    const scenario = schedule();
    const loadStart = scenario.startedAt;
    const inFlight = new Set<Promise<void>>();
    const load = (async () => {
      let n = 0;
      while (loading) {
        // A client that keeps at most IN_FLIGHT creates waiting, as a real submitter does: on a
        // box too busy for RATE/s, an open loop would pile up requests without bound and every
        // one would time out (the box's collapse, not the deploy's).
        if (inFlight.size >= IN_FLIGHT) {
          await Promise.race(inFlight);
          continue;
        }
        const at = Date.now();
        const p = counting
          .createTask({
            create_info: { task_type: 'demo.echo', task_name: `rolling ${n}` },
            params: { n },
          })
          .then((t) => void created.push({ id: t.task_id, at }))
          .catch((err: unknown) => {
            errors.push(err instanceof BatonApiError ? `${err.name}: ${err.message}` : String(err));
          })
          .finally(() => inFlight.delete(p));
        inFlight.add(p);
        n++;
        await scenario.at((n * 1000) / RATE);
      }
    })();

    // A warm-up, then a few seconds of steady load as the baseline.
    await scenario.at(6000);
    const deployStart = Date.now();
    const figures: string[] = [];
    // What a stopped scheduler left behind: tasks still claimed by it in the database (another
    // instance could take them only when their claim lease lapsed) and, from every scheduler's
    // output, queue entries requeued because their runner stopped without letting go.
    const stranded: string[] = [];
    const outputs: string[] = [];
    const conn = await createConnection({
      host: '127.0.0.1',
      user: 'root',
      password: '',
      database: backend.env.BATON_MYSQL_DATABASE,
    });
    db = conn;
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      await schedulers[i].stop();
      procs.delete(schedulers[i]);
      outputs.push(schedulers[i].output());
      const stopped = Date.now() - t0;
      // What the stop said about the drives under way (printed with the figures below).
      const shutdown =
        outputs[i].match(
          /[^\n]*(still under way|handing back the claim|drives under way finished)[^\n]*/g,
        ) ?? [];
      const [held] = await conn.query(
        // The database's own clock: a claim not yet lapsed when the stop was over.
        "SELECT task_id, status, lease_until - UNIX_TIMESTAMP(NOW(3)) * 1000 AS left_ms FROM baton_task WHERE owner = ? AND status <> 'FINISH' AND lease_until > UNIX_TIMESTAMP(NOW(3)) * 1000",
        [`roll-${i + 1}`],
      );
      stranded.push(
        ...(held as { task_id: string; status: string; left_ms: number }[]).map(
          (r) =>
            `roll-${i + 1}: ${r.task_id} ${r.status}, claim ${Math.round(Number(r.left_ms))} ms left`,
        ),
      );
      const t1 = Date.now();
      await start(i);
      const listening = Date.now() - t1;
      await eventually(
        async () => ((await fetch(`${urls[i]}/health/ready`)).status === 200 ? true : undefined),
        30_000,
        `scheduler ${i + 1} ready again`,
      );
      figures.push(
        ...shutdown.slice(0, 5).map((l) => `s${i + 1} stopping: ${l.slice(0, 300)}`),
        `s${i + 1}: stopped in ${stopped} ms, listening ${listening} ms and ready ${Date.now() - t1} ms after its start (${/started in [^\n]*/.exec(schedulers[i].output())?.[0] ?? ''})`,
      );
      await scenario.after(1500);
    }
    const deployEnd = Date.now();
    await scenario.after(2000);
    loading = false;
    await load;
    await Promise.all([...inFlight]);

    expect(errors).toEqual([]);
    const ids = created.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);

    // Every task finishes; the database says when each was created and finished.
    const rows = await eventually(
      async () => {
        const [r] = await conn.query(
          'SELECT task_id, status, outcome, created_at, finished_at FROM baton_task WHERE task_id IN (?)',
          [ids],
        );
        const all = r as {
          status: string;
          outcome: string;
          created_at: number;
          finished_at: number;
        }[];
        return all.length === ids.length && all.every((t) => t.status === 'FINISH')
          ? all
          : undefined;
      },
      300_000,
      `all ${ids.length} tasks finishing`,
    );
    expect(rows.filter((r) => r.outcome !== 'SUCCESS')).toEqual([]);
    const latency = (r: (typeof rows)[number]): number =>
      Number(r.finished_at) - Number(r.created_at);
    // Before the deploy: everything after the warm-up, so a box too busy for RATE/s shows its
    // own backlog here as well as during the deploy.
    const before = rows
      .filter((r) => Number(r.created_at) < deployStart && Number(r.created_at) >= loadStart + 2000)
      .map(latency);
    const during = rows
      .filter((r) => Number(r.created_at) >= deployStart && Number(r.created_at) <= deployEnd)
      .map(latency);
    // What the deploy added: the slowest task during it against the slowest before it.
    const extra = Math.max(...during) - Math.max(...before);
    const idSet = new Set(ids);
    const runs = readRunLogs(logs).filter((r) => idSet.has(r.task_id));
    console.log(
      [
        `rolling restart of 3 schedulers under ${Math.round((ids.length * 1000) / (deployEnd - deployStart + 8000))}/s: ${ids.length} tasks, 0 client errors (${retries} retries by the client)`,
        ...figures,
        `create->finish before: p50 ${quantile(before, 0.5)} ms, p99 ${quantile(before, 0.99)} ms; during: p50 ${quantile(during, 0.5)} ms, p99 ${quantile(during, 0.99)} ms, max ${Math.max(...during)} ms`,
        `max extra delay ${extra} ms`,
      ].join('\n'),
    );
    expect(findOverlaps(runs)).toEqual([]);
    // A stop hands back what it holds: no task waited for a lapsed claim, in the database or
    // in the queue. (The delays above are printed, not bounded: a busy box makes them long.)
    // A stop that ran out of BATON_SHUTDOWN_GRACE_MS (a box so starved that handing back took
    // longer) exits anyway, and what it still held lapses by lease as after a crash: allowed then,
    // and said; nothing is lost or doubled either way (checked above).
    const forced = outputs
      .map((o, i) => (/shutdown still going after \d+ ms/.test(o) ? `roll-${i + 1}` : ''))
      .filter(Boolean);
    expect(stranded.filter((s) => !forced.some((f) => s.startsWith(`${f}:`)))).toEqual([]);
    const requeued = [...outputs, ...schedulers.map((s) => s.output())].flatMap(
      (o) => o.match(/requeued \d+ entries whose runner stopped[^\n]*/g) ?? [],
    );
    if (forced.length > 0)
      console.log(
        `stops past their grace (the box was too busy): ${forced.join(', ')}; left to lapse: ${stranded.length} claims, ${requeued.length} requeues`,
      );
    else
      expect(
        // With what the schedulers warned of meanwhile about the queue and their stops, so a
        // requeue says where its claim was lost (a claim or ack whose reply did not come, a stop).
        requeued.length === 0
          ? []
          : [
              ...requeued,
              ...[...outputs, ...schedulers.map((x) => x.output())].flatMap((o, k) =>
                o
                  .split('\n')
                  .filter(
                    (l) => /"level":"(warn|error)"/.test(l) && /queue|ack|claim|drive/.test(l),
                  )
                  .map(
                    (l) =>
                      `${k < outputs.length ? `stopped roll-${k + 1}` : 'running'}: ${l.slice(0, 400)}`,
                  ),
              ),
            ],
      ).toEqual([]);
  });
});
