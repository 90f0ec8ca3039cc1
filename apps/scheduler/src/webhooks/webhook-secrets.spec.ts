import { Webhook } from 'standardwebhooks';
import { ManualClock } from '@baton/time';
import { loadSchedulerConfig } from '../config';
import { newSecret, WebhookSecrets } from './webhook-secrets';
import { newWebhook } from './webhook.model';
import { WebhooksRepository } from './webhooks.repository';

describe('webhook signatures', () => {
  const clock = new ManualClock();
  const secrets = new WebhookSecrets(
    {} as WebhooksRepository,
    clock,
    loadSchedulerConfig({ BATON_AUTH_MODE: 'none' }),
  );
  const at = new Date(clock.now());
  const body = JSON.stringify({ type: 'task.finished', data: { name: 'ü ✓ "quoted"' } });

  it('signs as the Standard Webhooks library does, and verifies with it', () => {
    const hook = newWebhook(
      {
        webhookId: 'wh_x',
        kind: 'subscription',
        tenant: null,
        url: 'https://hooks.example.com/x',
        events: ['task.finished'],
        secret: newSecret(),
      },
      clock.now(),
    );
    const header = secrets.signature(hook, 'msg_1', at, body);
    expect(header).toBe(new Webhook(hook.secret).sign('msg_1', at, body));
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': header,
    };
    // The library checks the timestamp against its own clock: it is asked at the same moment.
    jest.useFakeTimers({ now: at });
    try {
      expect(new Webhook(hook.secret).verify(body, headers)).toEqual(JSON.parse(body));
    } finally {
      jest.useRealTimers();
    }
  });

  it('signs with the previous secret too while it overlaps', () => {
    const previous = newSecret();
    const hook = {
      ...newWebhook(
        {
          webhookId: 'wh_x',
          kind: 'subscription',
          tenant: null,
          url: 'https://hooks.example.com/x',
          events: ['task.finished'],
          secret: newSecret(),
        },
        clock.now(),
      ),
      previousSecret: previous,
      previousSecretUntil: clock.now() + 1000,
    };
    expect(secrets.signature(hook, 'msg_2', at, body)).toBe(
      `${new Webhook(hook.secret).sign('msg_2', at, body)} ${new Webhook(previous).sign('msg_2', at, body)}`,
    );
    const later = new Date(clock.now() + 1000);
    expect(secrets.signature(hook, 'msg_2', later, body)).toBe(
      new Webhook(hook.secret).sign('msg_2', later, body),
    );
  });
});
