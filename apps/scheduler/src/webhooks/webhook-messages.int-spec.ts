import { systemClock } from '@baton/time';
import { DataSource } from 'typeorm';
import { createDataSource, TransactionRunner } from '../database';
import {
  TestDatabase,
  mysqlTestDatabase,
  sqliteTestDatabase,
} from '../database/testing/test-databases';
import { ENTITIES } from '../entities';
import { WebhookAttemptWriter } from './webhook-attempts.writer';
import { WebhookClaims } from './webhook-claims.repository';
import { newMessageId } from './webhook-events';
import { WebhookMessagesRepository } from './webhook-messages.repository';
import { newWebhook, WebhookModel } from './webhook.model';
import { WebhooksRepository } from './webhooks.repository';

const DAY = 86_400_000;

const hook = (id: string, now: number): WebhookModel =>
  newWebhook(
    {
      webhookId: id,
      kind: 'subscription',
      tenant: null,
      url: 'https://hooks.example.com/x',
      events: ['task.finished'],
      secret: 'whsec_x',
    },
    now,
  );

describe.each([
  ['sqlite', async () => sqliteTestDatabase()],
  ['mysql', mysqlTestDatabase],
])('the webhook delivery log on %s', (_name, make: () => Promise<TestDatabase>) => {
  let testDb: TestDatabase;
  let ds: DataSource;
  let webhooks: WebhooksRepository;
  let messages: WebhookMessagesRepository;
  let claims: WebhookClaims;
  let writer: WebhookAttemptWriter;

  beforeAll(async () => {
    testDb = await make();
    ds = createDataSource(testDb.config, ENTITIES);
    await ds.initialize();
    await ds.runMigrations();
    const tx = new TransactionRunner(ds, systemClock);
    webhooks = new WebhooksRepository(tx);
    messages = new WebhookMessagesRepository(tx, webhooks);
    claims = new WebhookClaims(ds, tx);
    writer = new WebhookAttemptWriter(ds, tx);
  });

  afterAll(async () => {
    await ds?.destroy();
    await testDb?.drop();
  });

  /** A message made `age` ms ago, then attempted once, ending `status`. */
  async function message(
    webhookId: string,
    age: number,
    status: 'pending' | 'delivered' | 'failed',
  ) {
    const now = Date.now();
    const at = now - age;
    const msg = {
      messageId: newMessageId(),
      webhookId,
      eventType: 'task.finished',
      tenant: 'default',
      taskId: `T${Math.random().toString(36).slice(2, 12)}`,
      url: null,
      body: '{}',
      seq: 16,
      createdAt: at,
    };
    await ds.transaction((m) => messages.insertMessages(m, [msg]));
    const [claim] = await claims.claim(webhookId, 'i1', now, now + 15_000, 1);
    expect(claim.message.messageId).toBe(msg.messageId);
    await writer.record({
      message: claim.message,
      attempt: {
        attempt: 1,
        at,
        statusCode: 500,
        latencyMs: 3,
        response: 'no',
        error: null,
        sentBy: 'i1',
      },
      status,
      // A pending one is not due again within the test: the next message's claim finds that one.
      nextAt: status === 'pending' ? now + DAY : at,
      failingSince: null,
      streakChanged: false,
      disable: null,
      claim: { by: 'i1', until: claim.until },
    });
    return msg.messageId;
  }

  it('purges what is older than the retention and no longer pending, with its attempts', async () => {
    const now = Date.now();
    await webhooks.insert(hook('wh_keep', now));
    await webhooks.insert(hook('wh_gone', now));
    const oldDelivered = await message('wh_keep', 8 * DAY, 'delivered');
    const oldFailed = await message('wh_keep', 8 * DAY, 'failed');
    const oldPending = await message('wh_keep', 8 * DAY, 'pending');
    const young = await message('wh_keep', 1 * DAY, 'delivered');
    const other = await message('wh_gone', 8 * DAY, 'delivered');

    expect(await messages.purge(now - 7 * DAY, 1)).toBe(3);
    for (const id of [oldDelivered, oldFailed, other])
      expect({ id, left: await messages.message(id) }).toEqual({ id, left: undefined });
    expect((await messages.message(oldPending))?.status).toBe('pending');
    expect((await messages.message(young))?.status).toBe('delivered');
    const attempts = await messages.attemptsOf([oldDelivered, oldFailed, oldPending, young]);
    expect([...attempts.keys()].sort()).toEqual([oldPending, young].sort());
    expect(await messages.depth()).toBe(1);

    // A deleted subscription's log goes with it, pending messages too.
    await message('wh_gone', 0, 'pending');
    await webhooks.remove('wh_gone');
    await messages.removeLog('wh_gone');
    expect(await messages.messagesOf('wh_gone', undefined, 50)).toEqual([]);
    expect((await messages.messagesOf('wh_keep', undefined, 50)).map((m) => m.messageId)).toEqual([
      young,
      oldPending,
    ]);
  });

  // On SQLite transactions never overlap (one connection): the interleaving is MySQL's alone.
  const mysqlOnly = _name === 'mysql' ? it : undefined;
  mysqlOnly?.(
    'sends a message whose transaction commits after a later one: read by state, none skipped',
    async () => {
      const now = Date.now();
      await webhooks.insert(hook('wh_late', now));
      const row = (taskId: string) => ({
        messageId: newMessageId(),
        webhookId: 'wh_late',
        eventType: 'task.finished',
        tenant: 'default',
        taskId,
        url: null,
        body: '{}',
        seq: 16,
        createdAt: now,
      });
      const slow = row('T-slow');
      const quick = row('T-quick');
      // The slow transaction writes first (the lower, earlier id) and holds it uncommitted...
      const runner = ds.createQueryRunner();
      await runner.connect();
      await runner.startTransaction();
      await messages.insertMessages(runner.manager, [slow]);
      // ...while a later message commits and is read.
      await ds.transaction((m) => messages.insertMessages(m, [quick]));
      expect((await claims.due('wh_late', now, 10)).map((m) => m.taskId)).toEqual(['T-quick']);
      await runner.commitTransaction();
      await runner.release();
      // The earlier one, committed last, is due all the same: nothing reads past a position.
      expect((await claims.due('wh_late', now, 10)).map((m) => m.taskId).sort()).toEqual([
        'T-quick',
        'T-slow',
      ]);
    },
  );
});
