import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { ManualClock, systemClock } from '@baton/time';
import { DataSource } from 'typeorm';
import { loadSchedulerConfig } from '../config';
import { createDataSource, TransactionRunner } from '../database';
import {
  TestDatabase,
  mysqlTestDatabase,
  sqliteTestDatabase,
} from '../database/testing/test-databases';
import { ENTITIES } from '../entities';
import { Metrics } from '../metrics';
import { TaskChangeFeed } from '../task-store';
import { WebhookAttemptWriter } from './webhook-attempts.writer';
import { WebhookClaims } from './webhook-claims.repository';
import { newMessageId, WebhookEvents } from './webhook-events';
import { WebhookMessagesRepository } from './webhook-messages.repository';
import { WebhookPoster } from './webhook-poster';
import { newSecret, WebhookSecrets } from './webhook-secrets';
import { WebhookSender } from './webhook-sender';
import { newWebhook, NewWebhookMessage } from './webhook.model';
import { WebhooksRepository } from './webhooks.repository';
import { eventually } from '../../../../test/support/processes';

const LEASE = 15_000;

/** What the receiver got: each request's webhook-id and body, in arrival order. */
interface Got {
  id: string;
  task: string;
  seq: number;
}

/**
 * A receiver in the test's process: answers each path's mode (200 unless told; 0: never), keeps
 * what it got.
 */
class Receiver {
  readonly got: Got[] = [];
  readonly modes = new Map<string, number>();
  private server!: Server;

  async start(): Promise<string> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as {
          data: { task: string; seq: number };
        };
        this.got.push({ id: String(req.headers['webhook-id']), ...body.data });
        const mode = this.modes.get(req.url ?? '') ?? 200;
        // 0: never answers (the sender's deadline, or its stop, ends the attempt).
        if (mode !== 0) res.writeHead(mode).end('{}');
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

/**
 * Two instances' senders on one database, one clock that only the test moves, and a real
 * receiver: both send, neither sends what the other holds, and each endpoint's window follows
 * how the receiver answers.
 */
describe.each([
  ['sqlite', async () => sqliteTestDatabase()],
  ['mysql', mysqlTestDatabase],
])('two webhook senders on %s', (_name, make: () => Promise<TestDatabase>) => {
  let testDb: TestDatabase;
  let ds: DataSource;
  let clock: ManualClock;
  let webhooks: WebhooksRepository;
  let messages: WebhookMessagesRepository;
  let receiver: Receiver;
  let base: string;
  const senders: WebhookSender[] = [];
  let sender: (instance: string) => WebhookSender;
  let a: WebhookSender;
  let b: WebhookSender;
  let hooks = 0;

  beforeAll(async () => {
    testDb = await make();
    ds = createDataSource(testDb.config, ENTITIES);
    await ds.initialize();
    await ds.runMigrations();
    clock = new ManualClock(Date.UTC(2026, 10, 1));
    const tx = new TransactionRunner(ds, systemClock);
    webhooks = new WebhooksRepository(tx);
    messages = new WebhookMessagesRepository(tx, webhooks);
    receiver = new Receiver();
    base = await receiver.start();
    sender = (instance: string): WebhookSender => {
      const config = loadSchedulerConfig({
        BATON_AUTH_MODE: 'none',
        BATON_INSTANCE_ID: instance,
        BATON_WEBHOOK_ALLOW: '127.0.0.0/8',
        BATON_WEBHOOK_CLAIM_LEASE: `${LEASE}ms`,
        BATON_WEBHOOK_RETRY_SCHEDULE: '5s',
      });
      const secrets = new WebhookSecrets(webhooks, clock, config);
      const s = new WebhookSender(
        webhooks,
        new WebhookClaims(ds, tx),
        new WebhookAttemptWriter(ds, tx),
        new WebhookPoster(secrets, clock, config),
        new WebhookEvents(webhooks, messages, secrets),
        {} as TaskChangeFeed,
        secrets,
        new Metrics(),
        clock,
        config,
      );
      senders.push(s);
      return s;
    };
    a = sender('a');
    b = sender('b');
  });

  afterAll(async () => {
    for (const s of senders) await s.onApplicationShutdown();
    await receiver?.stop();
    await ds?.destroy();
    await testDb?.drop();
  });

  /** A subscription at the receiver's `path`, with `seqs.length` events of each of `tasks` tasks. */
  async function subscription(path: string, tasks: number, seqs: number[]): Promise<string> {
    const webhookId = `wh_senders_${++hooks}`;
    await webhooks.insert(
      newWebhook(
        {
          webhookId,
          kind: 'subscription',
          tenant: null,
          url: `${base}${path}`,
          events: ['task.finished'],
          secret: newSecret(),
        },
        clock.now(),
      ),
    );
    const rows: NewWebhookMessage[] = [];
    for (const seq of seqs)
      for (let t = 0; t < tasks; t++) {
        const task = `${webhookId}-T${t}`;
        const body = JSON.stringify({ type: 'task.finished', data: { task, seq } });
        rows.push({
          messageId: newMessageId(),
          webhookId,
          eventType: 'task.finished',
          tenant: 'default',
          taskId: task,
          url: null,
          body,
          seq,
          createdAt: clock.now(),
        });
      }
    await ds.transaction((m) => messages.insertMessages(m, rows));
    // Every instance reads the subscriptions again within a second.
    await clock.advance(1000);
    return webhookId;
  }

  /** One pass of each sender at once, then their attempts answered and recorded: how many. */
  async function passes(...which: WebhookSender[]): Promise<number> {
    const before = receiver.got.length;
    await Promise.all(which.map((s) => s.passOnce()));
    await Promise.all(which.map((s) => s.idle()));
    return receiver.got.length - before;
  }

  const pending = async (webhookId: string): Promise<number> =>
    (await messages.messagesOf(webhookId, 'pending', 500)).length;

  it('both send, never one message twice, each task in order; windows grow', async () => {
    const hook = await subscription('/ok', 40, [16, 24, 32]);
    let most = 0;
    for (let i = 0; i < 100 && (await pending(hook)) > 0; i++)
      most = Math.max(most, await passes(a, b));
    expect(await pending(hook)).toBe(0);
    const got = receiver.got.filter((g) => g.task.startsWith(hook));
    // Nothing failed: each message once.
    expect(got).toHaveLength(120);
    expect(new Set(got.map((g) => g.id)).size).toBe(120);
    // Each task's events arrived in their order.
    const byTask = new Map<string, number[]>();
    for (const g of got) byTask.set(g.task, [...(byTask.get(g.task) ?? []), g.seq]);
    for (const [task, seqs] of byTask) expect({ task, seqs }).toEqual({ task, seqs: [16, 24, 32] });
    // Both instances sent a share, as the delivery log says.
    const log = await messages.attemptsOf(
      (await messages.messagesOf(hook, undefined, 500)).map((m) => m.messageId),
    );
    const by = new Map<string, number>();
    for (const attempts of log.values())
      for (const x of attempts) by.set(x.sentBy ?? '', (by.get(x.sentBy ?? '') ?? 0) + 1);
    expect([...by.keys()].sort()).toEqual(['a', 'b']);
    expect(by.get('a')! + by.get('b')!).toBe(120);
    // Fast 2xx answers let more out at once than the windows' start (4 each).
    expect(Math.max(a.window(hook).limit, b.window(hook).limit)).toBeGreaterThan(4);
    expect(most).toBeGreaterThan(8);
  });

  it("sends a dead instance's claims once their lease has run out, not before", async () => {
    const hook = await subscription('/lapsed', 3, [16]);
    // An instance claims them all and dies before it sends any.
    const dead = new WebhookClaims(ds, new TransactionRunner(ds, systemClock));
    const claimed = await dead.claim(hook, 'dead', clock.now(), clock.now() + LEASE, 10);
    expect(claimed).toHaveLength(3);
    await clock.advance(LEASE - 1);
    await passes(a, b);
    expect(receiver.got.filter((g) => g.task.startsWith(hook))).toEqual([]);
    await clock.advance(1);
    await passes(a, b);
    expect(await pending(hook)).toBe(0);
    const ids = claimed.map((c) => c.message.messageId).sort();
    expect(
      receiver.got
        .filter((g) => g.task.startsWith(hook))
        .map((g) => g.id)
        .sort(),
    ).toEqual(ids);
  });

  it("backs an endpoint's window off on failures, down to one, and grows it again", async () => {
    const hook = await subscription('/flaky', 40, [16]);
    receiver.modes.set('/flaky', 500);
    const w = a.window(hook);
    expect(w.limit).toBe(4);
    await passes(a);
    // Four in flight failed together: one step down, and a pause before the next attempt.
    expect(w.limit).toBe(2);
    expect(w.failing).toBe(true);
    expect(w.room(clock.now())).toBe(0);
    await passes(a);
    expect(receiver.got.filter((g) => g.task.startsWith(hook))).toHaveLength(4);
    await clock.advance(100);
    await passes(a);
    expect(w.limit).toBe(1);
    await clock.advance(100);
    await passes(a);
    expect(w.limit).toBe(1);
    expect(receiver.got.filter((g) => g.task.startsWith(hook))).toHaveLength(7);
    // The receiver recovers: each window of 2xx answers lets as many more out as it started with.
    receiver.modes.set('/flaky', 200);
    await clock.advance(100);
    expect(await passes(a)).toBe(1);
    expect(w.failing).toBe(false);
    expect(w.limit).toBe(5);
    expect(await passes(a)).toBe(5);
    expect(w.limit).toBe(9);
  });

  it('hands back the claims of attempts its stop cut short, logging no failure', async () => {
    const hook = await subscription('/held', 2, [16]);
    const got = (): Got[] => receiver.got.filter((g) => g.task.startsWith(hook));
    receiver.modes.set('/held', 0);
    const c = sender('c');
    await c.passOnce();
    const ids = (await messages.messagesOf(hook, 'pending', 10)).map((m) => m.messageId);
    await eventually(async () => (got().length === 2 ? true : undefined), 10_000, 'both sent');
    await c.onApplicationShutdown();
    expect((await messages.attemptsOf(ids)).size).toBe(0);
    // Due again at once, for the other instances: b takes them now, with no lease to wait out.
    receiver.modes.set('/held', 200);
    await passes(b);
    expect(await pending(hook)).toBe(0);
    expect(got()).toHaveLength(4);
  });
});
