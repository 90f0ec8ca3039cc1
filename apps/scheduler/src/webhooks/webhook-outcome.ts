import { WebhooksConfig } from '../config';
import {
  MessageStatus,
  WebhookAttemptModel,
  WebhookMessageModel,
  WebhookModel,
} from './webhook.model';

/** What one attempt does to its message and to its subscription. */
export interface AttemptOutcome {
  /** The message's new state. */
  status: MessageStatus;
  nextAt: number;
  /** The subscription's failing streak after this attempt (null: it succeeded). */
  failingSince: number | null;
  /** The streak is not what the subscription's row said when the attempt began. */
  streakChanged: boolean;
  /** Disable the subscription, with this reason. */
  disable: string | null;
}

/** The wait before attempt `n + 1` after `n` failed: the schedule's, with ±20% jitter. */
export function retryDelay(
  schedule: readonly number[],
  failed: number,
  random = Math.random,
): number {
  const base = schedule[Math.min(failed, schedule.length) - 1] ?? schedule[0];
  return Math.max(1, Math.round(base * (0.8 + 0.4 * random())));
}

/** What one attempt leads to: delivered, given up, or another try; and the subscription's fate. */
export function outcomeOf(
  cfg: Pick<WebhooksConfig, 'retryScheduleMs' | 'retryForMs' | 'disableAfterMs'>,
  msg: WebhookMessageModel,
  hook: WebhookModel,
  attempt: WebhookAttemptModel,
  random = Math.random,
): AttemptOutcome {
  const now = attempt.at;
  const code = attempt.statusCode;
  const subscription = hook.kind === 'subscription';
  if (delivered(attempt))
    return {
      status: 'delivered',
      nextAt: now,
      failingSince: null,
      streakChanged: hook.failingSince !== null,
      disable: null,
    };
  const failingSince = hook.failingSince ?? now;
  const streakChanged = hook.failingSince === null;
  if (code === 410)
    return {
      status: 'failed',
      nextAt: now,
      failingSince,
      streakChanged,
      disable: subscription ? 'the receiver answered 410 Gone' : null,
    };
  if (subscription && now - failingSince >= cfg.disableAfterMs)
    return {
      status: 'failed',
      nextAt: now,
      failingSince,
      streakChanged,
      disable: `every delivery failed for ${Math.round((now - failingSince) / 3_600_000)} h`,
    };
  const next = now + retryDelay(cfg.retryScheduleMs, attempt.attempt, random);
  if (next - msg.createdAt > cfg.retryForMs)
    return { status: 'failed', nextAt: now, failingSince, streakChanged, disable: null };
  return { status: 'pending', nextAt: next, failingSince, streakChanged, disable: null };
}

/** A 2xx answer: the receiver took the message. */
export function delivered(attempt: Pick<WebhookAttemptModel, 'statusCode'>): boolean {
  const code = attempt.statusCode;
  return code !== null && code >= 200 && code < 300;
}
