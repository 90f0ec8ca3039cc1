import { systemClock } from '@baton/time';
import { DataSource } from 'typeorm';
import { createDataSource, TransactionRunner } from '../database';
import {
  TestDatabase,
  mysqlTestDatabase,
  sqliteTestDatabase,
} from '../database/testing/test-databases';
import { ENTITIES } from '../entities';
import { AttemptRecord, WebhookAttemptWriter } from './webhook-attempts.writer';
import { Claim, WebhookClaims } from './webhook-claims.repository';
import { newMessageId } from './webhook-events';
import { WebhookMessagesRepository } from './webhook-messages.repository';
import { newWebhook, NewWebhookMessage } from './webhook.model';
import { WebhooksRepository } from './webhooks.repository';

const LEASE = 15_000;
const T0 = 1_800_000_000_000;

/**
 * Claims of two instances (two WebhookClaims, each its own name) on one database, and the attempt
 * writer's group commits. Time is given to each call, as the sender gives its clock's.
 */
describe.each([
  ['sqlite', async () => sqliteTestDatabase()],
  ['mysql', mysqlTestDatabase],
])('webhook claims on %s', (_name, make: () => Promise<TestDatabase>) => {
  let testDb: TestDatabase;
  let ds: DataSource;
  let tx: TransactionRunner;
  let webhooks: WebhooksRepository;
  let messages: WebhookMessagesRepository;
  let a: WebhookClaims;
  let b: WebhookClaims;
  let writer: WebhookAttemptWriter;
  let hooks = 0;

  beforeAll(async () => {
    testDb = await make();
    ds = createDataSource(testDb.config, ENTITIES);
    await ds.initialize();
    await ds.runMigrations();
    tx = new TransactionRunner(ds, systemClock);
    webhooks = new WebhooksRepository(tx);
    messages = new WebhookMessagesRepository(tx, webhooks);
    a = new WebhookClaims(ds, tx);
    b = new WebhookClaims(ds, tx);
    writer = new WebhookAttemptWriter(ds, tx);
  });

  afterAll(async () => {
    await ds?.destroy();
    await testDb?.drop();
  });

  /** A new subscription with these (task, seq) messages, all due at T0, in that order. */
  async function subscription(...events: [string, number][]): Promise<[string, string[]]> {
    const webhookId = `wh_claims_${++hooks}`;
    await webhooks.insert(
      newWebhook(
        {
          webhookId,
          kind: 'subscription',
          tenant: null,
          url: 'https://hooks.example.com/x',
          events: ['task.finished'],
          secret: 'whsec_x',
        },
        T0,
      ),
    );
    const rows: NewWebhookMessage[] = events.map(([taskId, seq]) => ({
      messageId: newMessageId(),
      webhookId,
      eventType: 'task.finished',
      tenant: 'default',
      taskId,
      url: null,
      body: '{}',
      seq,
      createdAt: T0,
    }));
    await ds.transaction((m) => messages.insertMessages(m, rows));
    return [webhookId, rows.map((r) => r.messageId)];
  }

  /** The record of a 2xx (or a 500) answer to a claimed message, sent by `by`. */
  const answer = (c: Claim, by: string, at: number, code = 200): AttemptRecord => ({
    message: c.message,
    attempt: {
      attempt: c.message.attempts + 1,
      at,
      statusCode: code,
      latencyMs: 2,
      response: null,
      error: null,
      sentBy: by,
    },
    status: code === 200 ? 'delivered' : 'pending',
    nextAt: code === 200 ? at : at + 5000,
    failingSince: code === 200 ? null : at,
    streakChanged: code !== 200,
    disable: null,
    claim: { by, until: c.until },
  });

  const ids = (claims: readonly Claim[]): string[] => claims.map((c) => c.message.messageId);

  it('never lets two instances claim one message', async () => {
    const [hook, all] = await subscription(
      ...Array.from({ length: 120 }, (_, i): [string, number] => [`T${i}`, 16]),
    );
    const got = new Map<string, string[]>([
      ['a', []],
      ['b', []],
    ]);
    // Both claim at once, in small batches, until nothing is left.
    await Promise.all(
      [
        ['a', a],
        ['b', b],
      ].map(async ([owner, claims]) => {
        for (;;) {
          const batch = await (claims as WebhookClaims).claim(
            hook,
            owner as string,
            T0,
            T0 + LEASE,
            7,
          );
          got.get(owner as string)!.push(...ids(batch));
          if (batch.length === 0 && (await a.due(hook, T0, 1)).length === 0) return;
        }
      }),
    );
    const both = [...got.get('a')!, ...got.get('b')!];
    expect(both.length).toBe(all.length);
    expect(new Set(both)).toEqual(new Set(all));
    // Each row names the instance that was told it won it.
    for (const [owner, list] of got)
      for (const id of list) expect({ id, by: await claimedBy(id) }).toEqual({ id, by: owner });
  });

  it('tells an instance which of its batch it won when another took some first', async () => {
    const [hook] = await subscription(
      ...Array.from({ length: 10 }, (_, i): [string, number] => [`R${i}`, 16]),
    );
    // Between a's look at the due messages and its claim, b claims the three oldest.
    const due = a.due.bind(a);
    let taken: Claim[] = [];
    jest.spyOn(a, 'due').mockImplementationOnce(async (...args) => {
      const list = await due(...args);
      taken = await b.claim(hook, 'b', T0, T0 + LEASE, 3);
      return list;
    });
    const mine = await a.claim(hook, 'a', T0, T0 + LEASE, 10);
    expect(taken).toHaveLength(3);
    expect(mine).toHaveLength(7);
    expect(ids(mine).filter((id) => ids(taken).includes(id))).toEqual([]);
  });

  it('gives a lapsed claim to another instance once its lease has run out, not before', async () => {
    const [hook, [id]] = await subscription(['L1', 16]);
    const [held] = await a.claim(hook, 'a', T0, T0 + LEASE, 5);
    expect(held.message.messageId).toBe(id);
    // a dies with it. Until the lease runs out the message is a's alone.
    expect(await b.claim(hook, 'b', T0 + LEASE - 1, T0 + 2 * LEASE, 5)).toEqual([]);
    const [taken] = await b.claim(hook, 'b', T0 + LEASE, T0 + 2 * LEASE, 5);
    expect(taken.message.messageId).toBe(id);
    // a's answer comes after all (it stalled, it did not die): its attempt is logged, but the
    // message is b's to settle.
    await writer.record(answer(held, 'a', T0 + LEASE + 10, 500));
    expect(await messages.message(id)).toMatchObject({ status: 'pending', attempts: 0 });
    await writer.record(answer(taken, 'b', T0 + LEASE + 20));
    expect(await messages.message(id)).toMatchObject({ status: 'delivered', attempts: 1 });
    const log = (await messages.attemptsOf([id])).get(id)!;
    expect(log.map((x) => [x.sentBy, x.statusCode])).toEqual([
      ['a', 500],
      ['b', 200],
    ]);
  });

  it('keeps the order of a (subscription, task) across instances, claimed or not', async () => {
    const [hook, [t1, u1, t2, u2, t3]] = await subscription(
      ['T', 16],
      ['U', 16],
      ['T', 24],
      ['U', 24],
      ['T', 32],
    );
    const first = await a.claim(hook, 'a', T0, T0 + LEASE, 10);
    expect(ids(first).sort()).toEqual([t1, u1].sort());
    // The next of each task waits while the one before is in flight at a.
    expect(await b.claim(hook, 'b', T0 + 1, T0 + LEASE, 10)).toEqual([]);
    await writer.record(
      answer(
        first.find((c) => c.message.messageId === t1)!,
        'a',
        T0 + 2,
      ),
    );
    const second = await b.claim(hook, 'b', T0 + 3, T0 + 3 + LEASE, 10);
    expect(ids(second)).toEqual([t2]);
    // b dies with T's second; U's first is answered by a meanwhile.
    await writer.record(
      answer(
        first.find((c) => c.message.messageId === u1)!,
        'a',
        T0 + 4,
      ),
    );
    const [u2Claim] = await a.claim(hook, 'a', T0 + 5, T0 + 5 + LEASE, 10);
    expect(u2Claim.message.messageId).toBe(u2);
    await writer.record(answer(u2Claim, 'a', T0 + 6));
    // T's third waits for its second, then for b's claim to lapse and a to send it.
    expect(await a.claim(hook, 'a', T0 + 3 + LEASE - 1, T0 + 2 * LEASE, 10)).toEqual([]);
    const [again] = await a.claim(hook, 'a', T0 + 3 + LEASE, T0 + 3 + 2 * LEASE, 10);
    expect(again.message.messageId).toBe(t2);
    await writer.record(answer(again, 'a', T0 + 3 + LEASE + 1));
    expect(ids(await b.claim(hook, 'b', T0 + 3 + LEASE + 2, T0 + 3 * LEASE, 10))).toEqual([t3]);
  });

  it('records many attempts in a few commits, and each subscription streak once', async () => {
    const [hook, all] = await subscription(
      ...Array.from({ length: 60 }, (_, i): [string, number] => [`G${i}`, 16]),
    );
    const claimed = await a.claim(hook, 'a', T0, T0 + LEASE, 60);
    expect(claimed).toHaveLength(60);
    const run = jest.spyOn(tx, 'run');
    // The first is written alone at once; those answered meanwhile go together after it.
    await Promise.all(
      claimed.map((c, i) => writer.record(answer(c, 'a', T0 + 10 + i, i === 59 ? 500 : 200))),
    );
    expect(run.mock.calls.length).toBeLessThanOrEqual(3);
    run.mockRestore();
    const states = await Promise.all(all.map((id) => messages.message(id)));
    const pending = states.filter((s) => s?.status === 'pending').map((s) => s!.messageId);
    expect(pending).toEqual([claimed[59].message.messageId]);
    expect(states.filter((s) => s?.status === 'delivered')).toHaveLength(59);
    // The group's last attempt failed: the streak starts then, and a later one does not move it.
    expect((await webhooks.find(hook))?.failingSince).toBe(T0 + 10 + 59);
    const [retry] = await b.claim(hook, 'b', T0 + 10_000, T0 + 10_000 + LEASE, 5);
    await writer.record(answer(retry, 'b', T0 + 10_001, 500));
    expect((await webhooks.find(hook))?.failingSince).toBe(T0 + 10 + 59);
  });

  async function claimedBy(messageId: string): Promise<string | null> {
    const [row] = (await ds.query(
      'SELECT claimed_by FROM baton_webhook_message WHERE message_id = ?',
      [messageId],
    )) as { claimed_by: string | null }[];
    return row?.claimed_by ?? null;
  }
});
