import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection, createConnection, RowDataPacket } from 'mysql2/promise';
import { Api, Backend, productionBackend, startFleet, startTemplateWorker } from './support/baton';
import { RunningProcess, eventually, freePort, schedule } from './support/processes';
import { Got, Receiver } from './support/webhooks';

jest.setTimeout(600_000);

const TASKS = 2000;
/** BATON_WEBHOOK_CLAIM_LEASE of the instances. */
const CLAIM_LEASE_MS = 8000;

/** A claim the killed instance held when it died. */
interface HeldClaim {
  message_id: string;
  claim_until: number;
}

/** An attempt as the delivery log keeps it. */
interface Attempt {
  message_id: string;
  sent_by: string | null;
  at: number;
  status_code: number | null;
}

/**
 * Webhooks keep their promise through crashes, sent by every instance: 2,000 tasks with a
 * `task.finished` subscription on two schedulers, which both deliver. One is killed (-9) while it
 * holds claims on messages in flight: the other sends those once their lease has run out, and not
 * before. It is killed again while the receiver is down for 20 s. Every task's event arrives,
 * verified; a duplicate is only ever a retry of the same webhook-id.
 */
describe('webhooks through crashes, two senders (mariadb + redis)', () => {
  let backend: Backend;
  let dir: string;
  let db: Connection;
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
      BATON_WEBHOOK_TIMEOUT: '5s',
      BATON_WEBHOOK_CLAIM_LEASE: `${CLAIM_LEASE_MS / 1000}s`,
    };
    db = await createConnection({
      host: '127.0.0.1',
      port: 3306,
      user: 'root',
      password: '',
      database: backend.env.BATON_MYSQL_DATABASE,
    });
  });

  afterAll(async () => {
    await Promise.all([...procs].map((p) => p.stop()));
    await db?.end();
    await backend?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The pending messages `instance` has a claim on that runs past `after` (epoch ms). */
  /**
   * The claims `instance` holds (a record or a hand-back ends one: claim_until back to 0). With
   * `takenWithinMs`, only claims taken that recently (their lease left, by the database's clock
   * on this machine), whose attempts stay in flight a while yet.
   */
  async function claimsOf(instance: string, takenWithinMs?: number): Promise<HeldClaim[]> {
    const [rows] = await db.query<RowDataPacket[]>(
      `SELECT message_id, claim_until FROM baton_webhook_message
        WHERE claimed_by = ? AND status = 'pending' AND claim_until > ${
          takenWithinMs === undefined ? '0' : 'UNIX_TIMESTAMP(NOW(3)) * 1000 + ?'
        }`,
      takenWithinMs === undefined ? [instance] : [instance, CLAIM_LEASE_MS - takenWithinMs],
    );
    return rows.map((r) => ({
      message_id: String(r.message_id),
      claim_until: Number(r.claim_until),
    }));
  }

  it("delivers every task.finished event from both instances, a dead one's claims after its lease", async () => {
    const port = await freePort();
    const log = join(dir, 'received.jsonl');
    let receiver = await Receiver.start({ port, log });
    procs.add(receiver.proc);
    const fleet = await startFleet(backend, 2, 'hook-crash', procs);
    const worker = await startTemplateWorker(
      'hook-crash-w',
      fleet.urls.join(','),
      join(dir, 'runs.jsonl'),
    );
    procs.add(worker);
    const apis = fleet.urls.map((u) => new Api(u));
    await apis[1].waitForWorkers(1);
    const hook = await apis[0].call<{ webhook_id: string; secret: string }>(
      'POST',
      '/v1/webhooks',
      { url: receiver.hook('crash'), events: ['task.finished'] },
    );
    expect(hook.status).toBe(201);
    const secret = { name: 'crash', secrets: [hook.data.secret] };
    await receiver.control('secret', secret);

    // Created through both instances in turn: each one's finishes are its messages to send first.
    const ids: string[] = [];
    const createAll = (async () => {
      for (let i = 0; i < TASKS; i += 100) {
        const tasks = Array.from({ length: 100 }, (_, k) => ({
          create_info: { task_type: 'demo.echo', task_name: `hooked ${i + k}` },
          params: { i: i + k },
          idempotency_key: `hook-crash-${i + k}`,
        }));
        // Sent again, through the other instance, while one is down; the idempotency keys make
        // it once.
        let turn = i / 100;
        const res = await eventually(
          async () => {
            const r = await apis[turn++ % 2]
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
    // The receiver holds its answers: the first instance's attempts stay in flight, its claims
    // held, and it is killed with them. Killed while it holds claims taken in the last second:
    // their attempts are 4 s from timing out (and being given back), so the kill, however slow
    // on a loaded box, lands while they are held (an older claim's attempt could end first: it
    // once left none at the kill).
    await receiver.control('mode', { name: 'crash', mode: 'hang' });
    await eventually(
      async () => ((await claimsOf('hook-crash-1', 1000)).length > 0 ? true : undefined),
      60_000,
      'hook-crash-1 holding claims taken in the last second',
    );
    await fleet.schedulers[0].kill9(); // crash 1, mid-run, claims in flight
    const held = await claimsOf('hook-crash-1');
    expect(held.length).toBeGreaterThan(0);
    await receiver.control('mode', { name: 'crash', mode: 'ok' });
    // The other instance sends them (the first stays down meanwhile), once their lease ran out.
    const heldIds = held.map((h) => h.message_id);
    await eventually(
      async () => {
        const [rows] = await db.query<RowDataPacket[]>(
          `SELECT COUNT(*) AS n FROM baton_webhook_message
            WHERE message_id IN (?) AND status = 'delivered'`,
          [heldIds],
        );
        return Number(rows[0].n) === heldIds.length ? true : undefined;
      },
      120_000,
      `the ${heldIds.length} messages hook-crash-1 held, delivered`,
    );
    const [attemptRows] = await db.query<RowDataPacket[]>(
      `SELECT message_id, sent_by, at, status_code FROM baton_webhook_attempt
        WHERE message_id IN (?) ORDER BY id`,
      [heldIds],
    );
    const attempts = attemptRows as Attempt[];
    for (const h of held) {
      const mine = attempts.filter((a) => a.message_id === h.message_id);
      const byOther = mine.filter((a) => a.sent_by === 'hook-crash-2');
      // Taken only after the lease: no attempt of the other instance before it ran out.
      expect({
        message: h.message_id,
        before: byOther.filter((a) => Number(a.at) < h.claim_until).length,
        deliveredByOther: byOther.some((a) => a.status_code === 200),
      }).toEqual({ message: h.message_id, before: 0, deliveredByOther: true });
    }
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
        const tasks = new Set(list.filter((g) => g.answered === 'ok').map((g) => g.task_id));
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
    // Each instance's share, as the delivery log says who sent each attempt.
    const shares = new Map<string, number>();
    let before: string | undefined;
    for (;;) {
      const page = await apis[1].call<
        {
          message_id: string;
          status: string;
          attempt_log: { sent_by: string | null; status_code: number | null }[];
        }[]
      >(
        'GET',
        `/v1/webhooks/${hook.data.webhook_id}/deliveries?limit=500${before ? `&before=${before}` : ''}`,
      );
      expect(page.status).toBe(200);
      for (const d of page.data)
        for (const a of d.attempt_log)
          if (a.status_code === 200)
            shares.set(a.sent_by ?? '-', (shares.get(a.sent_by ?? '-') ?? 0) + 1);
      if (page.data.length < 500) break;
      before = page.data[page.data.length - 1].message_id;
    }
    console.log(
      `webhook crash test: ${TASKS} tasks, ${got.length} deliveries received, ` +
        `${byTask.size} distinct tasks, ${duplicates} duplicates (same webhook-id), ` +
        `${twoIds.length} tasks with two webhook-ids, ${unverified.length} unverified; ` +
        `${held.length} claims held by the killed instance, sent by the other; delivered by ` +
        [...shares].map(([k, v]) => `${k} ${v}`).join(', '),
    );
    expect(byTask.size).toBe(TASKS);
    expect(got.every((g) => g.type === 'task.finished' && g.task_status === 'FINISH')).toBe(true);
    expect(twoIds.map(([id]) => id)).toEqual([]);
    expect(unverified.map((g) => g.why)).toEqual([]);
    expect(shares.get('hook-crash-1') ?? 0).toBeGreaterThan(0);
    expect(shares.get('hook-crash-2') ?? 0).toBeGreaterThan(0);
  });
});
