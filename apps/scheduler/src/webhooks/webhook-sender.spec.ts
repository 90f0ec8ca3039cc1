import { outcomeOf, retryDelay } from './webhook-outcome';
import {
  newWebhook,
  WebhookAttemptModel,
  WebhookMessageModel,
  WebhookModel,
} from './webhook.model';

const S = 1000;
const cfg = {
  retryScheduleMs: [5 * S, 30 * S, 120 * S],
  retryForMs: 3600 * S,
  disableAfterMs: 86_400 * S,
};
const T0 = 1_800_000_000_000;

const message = (over: Partial<WebhookMessageModel> = {}): WebhookMessageModel => ({
  messageId: 'msg_x',
  webhookId: 'wh_x',
  eventType: 'task.finished',
  tenant: 'default',
  taskId: 't1',
  url: null,
  body: '{}',
  seq: 16,
  status: 'pending',
  attempts: 0,
  nextAt: T0,
  lastStatus: null,
  lastError: null,
  createdAt: T0,
  finishedAt: null,
  ...over,
});

const hook = (over: Partial<WebhookModel> = {}): WebhookModel => ({
  ...newWebhook(
    {
      webhookId: 'wh_x',
      kind: 'subscription',
      tenant: null,
      url: 'https://hooks.example.com/x',
      events: ['task.finished'],
      secret: 'whsec_x',
    },
    T0,
  ),
  ...over,
});

const attempt = (n: number, at: number, statusCode: number | null): WebhookAttemptModel => ({
  attempt: n,
  at,
  statusCode,
  latencyMs: 5,
  response: null,
  error: statusCode === null ? 'ECONNREFUSED' : null,
  sentBy: 'i1',
});

describe('webhook retries', () => {
  it('waits the schedule, with at most 20% jitter either way, the last wait repeating', () => {
    expect(retryDelay(cfg.retryScheduleMs, 1, () => 0.5)).toBe(5 * S);
    expect(retryDelay(cfg.retryScheduleMs, 1, () => 0)).toBe(4 * S);
    expect(retryDelay(cfg.retryScheduleMs, 1, () => 1)).toBe(6 * S);
    expect(retryDelay(cfg.retryScheduleMs, 2, () => 0.5)).toBe(30 * S);
    expect(retryDelay(cfg.retryScheduleMs, 3, () => 0.5)).toBe(120 * S);
    expect(retryDelay(cfg.retryScheduleMs, 9, () => 0.5)).toBe(120 * S);
  });

  it('delivers on 2xx and ends a failing streak', () => {
    const o = outcomeOf(cfg, message(), hook({ failingSince: T0 - S }), attempt(1, T0, 204));
    expect(o).toMatchObject({ status: 'delivered', failingSince: null, streakChanged: true });
    expect(outcomeOf(cfg, message(), hook(), attempt(1, T0, 200)).streakChanged).toBe(false);
  });

  it('tries again on any other answer or none, on the schedule, and starts a streak', () => {
    for (const code of [500, 503, 404, 301, 429, null]) {
      const o = outcomeOf(cfg, message(), hook(), attempt(1, T0, code), () => 0.5);
      expect({ code, o }).toEqual({
        code,
        o: {
          status: 'pending',
          nextAt: T0 + 5 * S,
          failingSince: T0,
          streakChanged: true,
          disable: null,
        },
      });
    }
  });

  it('gives a message up once its next try would pass the retry window', () => {
    const old = message({ createdAt: T0 - 3600 * S + 10 * S });
    const o = outcomeOf(cfg, old, hook({ failingSince: T0 - 60 * S }), attempt(4, T0, 500));
    expect(o).toMatchObject({ status: 'failed', disable: null, streakChanged: false });
  });

  it('disables a subscription on 410, or after failing for the limit; never a callback signer', () => {
    expect(outcomeOf(cfg, message(), hook(), attempt(1, T0, 410))).toMatchObject({
      status: 'failed',
      disable: expect.stringMatching(/410/),
    });
    const streak = hook({ failingSince: T0 - cfg.disableAfterMs });
    expect(outcomeOf(cfg, message(), streak, attempt(3, T0, 500))).toMatchObject({
      status: 'failed',
      disable: expect.stringMatching(/failed for 24 h/),
    });
    const signer = hook({ kind: 'callback', failingSince: T0 - cfg.disableAfterMs });
    expect(outcomeOf(cfg, message(), signer, attempt(1, T0, 410)).disable).toBeNull();
    expect(outcomeOf(cfg, message(), signer, attempt(1, T0, 500))).toMatchObject({
      status: 'pending',
      disable: null,
    });
  });
});
