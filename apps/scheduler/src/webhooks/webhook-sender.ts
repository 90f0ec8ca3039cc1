import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { Agent, request } from 'undici';
import { LOCK_PROVIDER, Lease, LockProvider } from '@baton/locks';
import { guardedLookup, OutgoingAllowList, outgoingUrlProblem } from '@baton/task-contract';
import { Clock, NudgedLoop } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig, WebhooksConfig } from '../config';
import { Metrics } from '../metrics';
import { TaskChangeFeed } from '../task-store';
import { WebhookEvents } from './webhook-events';
import { WebhookSecrets } from './webhook-secrets';
import {
  WebhookAttemptModel,
  WebhookKind,
  WebhookMessageModel,
  WebhookModel,
} from './webhook.model';
import { AttemptRecord, WebhookMessagesRepository } from './webhook-messages.repository';
import { WebhooksRepository } from './webhooks.repository';

/** The most of an answer kept in the delivery log. */
const RESPONSE_BYTES = 1024;
/** The lease that makes one instance the fleet's sender (renewed while it lives). */
const LEASE_TTL_MS = 10_000;
/** How often the subscriptions are read again (changes made through other instances). */
const REFRESH_MS = 1000;
/** How long a pass waits after a nudge, for the sends and writes of that moment to join it. */
const LINGER_MS = 20;
/** After a failed attempt, the endpoint's next attempt waits this long (one at a time). */
export const FAILING_PACE_MS = 100;

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
): Omit<AttemptRecord, 'message' | 'attempt'> {
  const now = attempt.at;
  const code = attempt.statusCode;
  const subscription = hook.kind === 'subscription';
  if (code !== null && code >= 200 && code < 300)
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

/**
 * Delivers webhook messages: one instance of the fleet at a time (a lease), each message the
 * earliest pending of its (subscription, task), at most BATON_WEBHOOK_PER_ENDPOINT at once to one
 * endpoint and BATON_WEBHOOK_CONCURRENCY in all. Every attempt is logged with its answer; the
 * message is then delivered (2xx), tried again later on the retry schedule, or given up. It runs
 * apart from the task engine: a slow or dead receiver holds only its own messages back.
 */
@Injectable()
export class WebhookSender implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Webhooks');
  private readonly cfg: WebhooksConfig;
  private readonly allow: OutgoingAllowList;
  private readonly agent: Agent;
  private lease: Lease | undefined;
  /** Messages whose send ended since the current pass's query began (passes never overlap). */
  private readonly settled = new Set<string>();
  /** Endpoints whose last attempt failed: not tried again before then. */
  private readonly paused = new Map<string, number>();
  /** Messages in flight, by id: the endpoint each counts against. */
  private readonly inflight = new Map<string, string>();
  private readonly perEndpoint = new Map<string, number>();
  private readonly sends = new Set<Promise<void>>();
  private readonly loop: NudgedLoop;
  private refreshedAt = 0;
  /** Every tenant's callback signer (read with the subscriptions). */
  private signers: WebhookModel[] = [];
  /** Aborted at shutdown: attempts in flight end at once (their messages are sent again later). */
  private readonly closing = new AbortController();

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly messages: WebhookMessagesRepository,
    private readonly events: WebhookEvents,
    private readonly feed: TaskChangeFeed,
    private readonly secrets: WebhookSecrets,
    private readonly metrics: Metrics,
    private readonly clock: Clock,
    @Inject(LOCK_PROVIDER) private readonly locks: LockProvider,
    @Inject(SCHEDULER_CONFIG) config: SchedulerConfig,
  ) {
    this.cfg = config.outgoing.webhooks;
    this.allow = { networks: this.cfg.allowNetworks, hosts: this.cfg.allowHosts };
    this.agent = new Agent({
      connect: { lookup: guardedLookup(this.allow), timeout: this.cfg.timeoutMs },
      headersTimeout: this.cfg.timeoutMs,
      bodyTimeout: this.cfg.timeoutMs,
      keepAliveTimeout: 4000,
    });
    this.loop = new NudgedLoop(this.clock, this.logger, LINGER_MS, this.cfg.pollMs, () =>
      this.passOnce(),
    );
    // Series known ahead start at 0: a rate over them sees the first failure too.
    for (const kind of ['subscription', 'callback'] satisfies WebhookKind[]) {
      for (const result of ['delivered', 'failed'])
        this.metrics.inc('baton_webhook_attempts_total', { kind, result }, 0);
      for (const name of ['baton_webhook_given_up_total', 'baton_webhook_retries_total'])
        this.metrics.inc(name, { kind }, 0);
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    this.feed.onCommitted(() => this.nudge());
    await this.events.refresh().catch(() => undefined);
    this.loop.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.closing.abort(new Error('the scheduler is stopping'));
    await this.loop.stop();
    await Promise.allSettled([...this.sends]);
    await this.lease?.release().catch(() => undefined);
    await this.agent.close().catch(() => undefined);
  }

  /** Look for due messages soon (the nudges of one moment make one pass). */
  nudge(): void {
    this.loop.nudge();
  }

  /**
   * One look at the due messages: starts what the limits allow (tests call it). Each webhook is
   * asked for as many messages as it has room for: a subscription BATON_WEBHOOK_PER_ENDPOINT at
   * once (one while it is failing), a tenant's callbacks as many as the total allows, each
   * callback origin its own limit.
   */
  async passOnce(): Promise<void> {
    if (this.clock.now() - this.refreshedAt >= REFRESH_MS) {
      await this.events.refresh();
      this.signers = await this.repo.callbackSigners();
      this.secrets.remember(this.signers);
      this.refreshedAt = this.clock.now();
    }
    if (!(await this.holdLease())) return;
    // A send that ends while a query runs was recorded after the query may have read it.
    this.settled.clear();
    for (const hook of [...this.events.enabled(), ...this.signers]) {
      const free = this.cfg.concurrency - this.inflight.size;
      if (free <= 0) return;
      const subscription = hook.kind === 'subscription';
      if (subscription && (this.paused.get(hook.webhookId) ?? 0) > this.clock.now()) continue;
      const own = subscription ? (this.perEndpoint.get(hook.webhookId) ?? 0) : 0;
      const failing = hook.failingSince !== null || this.paused.has(hook.webhookId);
      const cap = subscription ? (failing ? 1 : this.cfg.perEndpoint) : free;
      const room = Math.min(free, cap - own);
      if (room <= 0) continue;
      // Those in flight come back too (still pending): ask for them on top.
      const due = await this.messages.due(hook.webhookId, this.clock.now(), room + own);
      for (const msg of due) this.start(msg, hook, cap);
    }
  }

  private start(msg: WebhookMessageModel, hook: WebhookModel, cap: number): void {
    // Stopping: nothing new goes out (the message stays pending for the next instance), and no
    // attempt is recorded for a delivery that was never sent.
    if (this.closing.signal.aborted) return;
    if (this.inflight.size >= this.cfg.concurrency) return;
    if (this.inflight.has(msg.messageId) || this.settled.has(msg.messageId)) return;
    const endpoint = msg.url === null ? hook.webhookId : originOf(msg.url);
    const busy = this.perEndpoint.get(endpoint) ?? 0;
    const pausedUntil = this.paused.get(endpoint);
    if (pausedUntil !== undefined && (pausedUntil > this.clock.now() || busy > 0)) return;
    if (busy >= (msg.url === null ? cap : this.cfg.perEndpoint)) return;
    this.inflight.set(msg.messageId, endpoint);
    this.perEndpoint.set(endpoint, busy + 1);
    const send = this.deliver(msg, hook)
      .catch(() => false)
      .then((delivered) => {
        // A failing endpoint gets one attempt at a time, FAILING_PACE_MS apart, until one succeeds.
        if (delivered) this.paused.delete(endpoint);
        else {
          this.paused.set(endpoint, this.clock.now() + FAILING_PACE_MS);
          this.clock.setTimeout(() => this.nudge(), FAILING_PACE_MS).unref();
        }
        this.settled.add(msg.messageId);
        this.inflight.delete(msg.messageId);
        const left = (this.perEndpoint.get(endpoint) ?? 1) - 1;
        if (left > 0) this.perEndpoint.set(endpoint, left);
        else this.perEndpoint.delete(endpoint);
        this.sends.delete(send);
        // The next event of the same task (or the next in line for the endpoint) may go now.
        this.nudge();
      });
    this.sends.add(send);
  }

  private async holdLease(): Promise<boolean> {
    if (this.lease && !this.lease.lost) return true;
    this.lease =
      (await this.locks.tryAcquire('webhooks:sender', { ttlMs: LEASE_TTL_MS, autoRenew: true })) ??
      undefined;
    return this.lease !== undefined;
  }

  /** One attempt and its record; true when the receiver took the message. */
  private async deliver(msg: WebhookMessageModel, hook: WebhookModel): Promise<boolean> {
    const attempt = await this.attempt(msg, hook);
    const outcome = outcomeOf(this.cfg, msg, hook, attempt);
    try {
      await this.messages.record({ message: msg, attempt, ...outcome });
    } catch (err) {
      // The message stays pending: it is sent again (same webhook-id), at least once.
      this.logger.error(
        `webhook ${msg.messageId}: the attempt could not be recorded: ${err instanceof Error ? err.message : String(err)}`,
      );
      return false;
    }
    const type = hook.kind;
    this.metrics.inc('baton_webhook_attempts_total', {
      kind: type,
      result: outcome.status === 'delivered' ? 'delivered' : 'failed',
    });
    if (outcome.status === 'delivered') {
      this.metrics.inc('baton_webhook_delivered_total', { kind: type });
      this.metrics.inc(
        'baton_webhook_delivery_latency_ms_total',
        { kind: type },
        attempt.at - msg.createdAt,
      );
    } else if (outcome.status === 'pending') {
      this.metrics.inc('baton_webhook_retries_total', { kind: type });
    } else {
      this.metrics.inc('baton_webhook_given_up_total', { kind: type });
    }
    if (outcome.disable !== null) {
      this.metrics.inc('baton_webhook_disabled_total');
      this.logger.warn(
        `webhook.disabled: ${hook.webhookId} (${hook.url ?? ''}) disabled: ${outcome.disable}`,
      );
      await this.events.refresh().catch(() => undefined);
    }
    return outcome.status === 'delivered';
  }

  /** One POST of the message, as the delivery log records it. */
  private async attempt(
    msg: WebhookMessageModel,
    hook: WebhookModel,
  ): Promise<WebhookAttemptModel> {
    const url = msg.url ?? hook.url ?? '';
    const started = this.clock.now();
    const n = msg.attempts + 1;
    const done = (statusCode: number | null, response: string | null, error: string | null) => ({
      attempt: n,
      at: started,
      statusCode,
      latencyMs: Math.max(0, this.clock.now() - started),
      response,
      error: error === null ? null : error.slice(0, 500),
    });
    // Literal addresses and schemes here; names are checked on the address connected to.
    const host = hostOf(url);
    const problem = this.allow.hosts.has(host)
      ? undefined
      : outgoingUrlProblem(url, this.allow.networks, 'refuse', 'BATON_WEBHOOK_ALLOW');
    if (problem) return done(null, null, `refused: the URL ${problem}`);
    const at = new Date(started);
    // Bounded by the call's timeout, and cut short when the process stops.
    const deadline = this.clock.deadline(this.cfg.timeoutMs, this.closing.signal);
    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: this.agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Baton-Webhooks/1',
          'webhook-id': msg.messageId,
          'webhook-timestamp': String(Math.floor(started / 1000)),
          'webhook-signature': this.secrets.signature(hook, msg.messageId, at, msg.body),
        },
        body: msg.body,
        signal: deadline.signal,
      });
      return done(res.statusCode, await head(res.body), null);
    } catch (err) {
      return done(null, null, describe(err));
    } finally {
      deadline.cancel();
    }
  }
}

/** The first RESPONSE_BYTES of a body, as text; the rest is not read. */
async function head(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    parts.push(chunk);
    size += chunk.length;
    if (size >= RESPONSE_BYTES) break;
  }
  body.destroy();
  return Buffer.concat(parts).subarray(0, RESPONSE_BYTES).toString('utf8');
}

function describe(err: unknown): string {
  const e = err as { message?: string; code?: string; cause?: { message?: string; code?: string } };
  const inner = e.cause?.message ? `: ${e.cause.message}` : '';
  return `${e.code ?? e.cause?.code ?? 'error'}: ${e.message ?? String(err)}${inner}`;
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname
      .replace(/^\[|\]$/g, '')
      .replace(/\.$/, '')
      .toLowerCase();
  } catch {
    return '';
  }
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}
