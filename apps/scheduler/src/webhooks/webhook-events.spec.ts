import { TaskOutcome, TaskStatus } from '@baton/task-contract';
import { EntityManager } from 'typeorm';
import { NewTaskStatusChange } from '../task-store';
import { newTask } from '../task-store/testing/new-task';
import { eventTypes, WebhookEvents } from './webhook-events';
import { WebhookSecrets } from './webhook-secrets';
import { NewWebhookMessage, WebhookModel } from './webhook.model';
import { WebhookMessagesRepository } from './webhook-messages.repository';
import { WebhooksRepository } from './webhooks.repository';

const S = TaskStatus;

describe('webhook events', () => {
  it('names the events of each move', () => {
    const t = (from: TaskStatus | null, to: TaskStatus, outcome: TaskOutcome | null = null) =>
      eventTypes({ from, to, outcome }, null);
    expect(t(null, S.INIT)).toEqual(['task.created', 'task.status_changed']);
    expect(t(S.INIT, S.CREATE)).toEqual(['task.status_changed']);
    expect(t(S.SUCCESS, S.FINISH, S.SUCCESS)).toEqual([
      'task.status_changed',
      'task.succeeded',
      'task.finished',
    ]);
    expect(t(S.FAIL, S.FINISH, S.FAIL)).toEqual([
      'task.status_changed',
      'task.failed',
      'task.finished',
    ]);
    expect(t(S.ROLLBACK, S.FINISH, S.ROLLBACK)).toContain('task.failed');
    // A topology run's centre task: the run's own events besides the task's.
    expect(eventTypes({ from: S.FAIL, to: S.FINISH, outcome: S.FAIL }, null, true)).toEqual([
      'task.status_changed',
      'task.failed',
      'task.finished',
      'topology.run.finished',
      'topology.run.failed',
    ]);
    expect(eventTypes({ from: S.RUNNING, to: S.FINISH, outcome: S.SUCCESS }, null, true)).toEqual([
      'task.status_changed',
      'task.succeeded',
      'task.finished',
      'topology.run.finished',
    ]);
    // A cancel is an end of its own, not a failure.
    expect(t(S.FAIL, S.FINISH, 'CANCELLED')).toEqual([
      'task.status_changed',
      'task.cancelled',
      'task.finished',
    ]);
    expect(eventTypes({ from: S.RUNNING, to: S.FAIL, outcome: null }, 'deadline_timeout')).toEqual([
      'task.status_changed',
      'task.timed_out',
    ]);
    expect(eventTypes({ from: S.RUNNING, to: S.FAIL, outcome: null }, 'boom')).toEqual([
      'task.status_changed',
    ]);
  });

  it('keeps the newest read of the subscriptions when two reads end out of order', async () => {
    const sub = {
      webhookId: 'wh_1',
      tenant: null,
      taskTypes: [],
      labels: {},
      events: ['task.created'],
    };
    const answers: ((list: WebhookModel[]) => void)[] = [];
    const written: NewWebhookMessage[] = [];
    const repo = {
      enabledSubscriptions: () => new Promise<WebhookModel[]>((r) => answers.push(r)),
    } as unknown as WebhooksRepository;
    const messages = {
      insertMessages: async (_m: unknown, rows: NewWebhookMessage[]) => {
        written.push(...rows);
      },
    } as unknown as WebhookMessagesRepository;
    const events = new WebhookEvents(repo, messages, {} as WebhookSecrets);
    const task = newTask();
    const change: NewTaskStatusChange = {
      task,
      reason: 'created',
      fromOutcome: null,
      order: 0,
      taskId: task.taskId,
      taskType: task.taskType,
      tenant: task.tenant,
      from: null,
      to: S.INIT,
      outcome: null,
      attempt: 0,
      // A moment as data: the messages carry it, nothing here reads a clock.
      at: Date.UTC(2026, 0, 1),
    };
    // An older read (before the subscription was saved) ends after a newer one that saw it.
    const older = events.refresh();
    const newer = events.refresh();
    answers[1]([sub as unknown as WebhookModel]);
    await newer;
    answers[0]([]);
    await older;
    expect(await events.write({} as EntityManager, [change])).toBe(true);
    expect(written.map((w) => [w.webhookId, w.eventType])).toEqual([['wh_1', 'task.created']]);
    expect(written[0].createdAt).toBe(change.at);
  });
});
