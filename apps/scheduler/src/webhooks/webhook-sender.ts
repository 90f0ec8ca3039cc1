import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { Clock, NudgedLoop } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig, WebhooksConfig } from '../config';
import { Metrics } from '../metrics';
import { TaskChangeFeed } from '../task-store';
import { WebhookAttemptWriter } from './webhook-attempts.writer';
import { Claim, WebhookClaims } from './webhook-claims.repository';
import { EndpointWindow, FAILING_PACE_MS } from './webhook-endpoint-window';
import { WebhookEvents } from './webhook-events';
import { AttemptOutcome, delivered, outcomeOf } from './webhook-outcome';
import { originOf, WebhookPoster } from './webhook-poster';
import { WebhookSecrets } from './webhook-secrets';
import { WebhookAttemptModel, WebhookKind, WebhookModel } from './webhook.model';
import { WebhooksRepository } from './webhooks.repository';

export { FAILING_PACE_MS } from './webhook-endpoint-window';
export { outcomeOf, retryDelay } from './webhook-outcome';

/** How often the subscriptions are read again (changes made through other instances). */
const REFRESH_MS = 1000;
/** How long a pass waits after a nudge, for the sends and writes of that moment to join it. */
const LINGER_MS = 20;
/** An endpoint's window unused this long is forgotten (callback origins come and go). */
const WINDOW_IDLE_MS = 600_000;
/**
 * Answered attempts waiting for their group commit, per attempt allowed in flight, past which no
 * more is claimed: the database is then what holds delivery back, and more answers would only
 * wait longer.
 */
const BACKLOG_PER_SLOT = 4;

/**
 * Delivers webhook messages from every instance of the fleet. Each pass claims due messages
 * (WebhookClaims: a claim is the instance's alone until its lease runs out, and a lapsed one, its
 * instance dead, is anyone's again), each the earliest pending of its (subscription, task), as
 * many as the endpoint's window has room for (EndpointWindow: grows while the receiver answers 2xx
 * fast, halves when it fails or slows) and BATON_WEBHOOK_CONCURRENCY in all. Every attempt is
 * logged with its answer, in group commits (WebhookAttemptWriter); the message is then delivered
 * (2xx), tried again later on the retry schedule, or given up. It runs apart from the task engine:
 * a slow or dead receiver holds only its own messages back.
 */
@Injectable()
export class WebhookSender implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Webhooks');
  private readonly cfg: WebhooksConfig;
  /** This instance, as its claims and attempts name it. */
  readonly owner: string;
  /** Endpoints' windows: a subscription's by its id, a callback origin's by the origin. */
  private readonly windows = new Map<string, EndpointWindow>();
  /** Messages this instance is sending, with the claim each is under now (it may be taken again). */
  private readonly own = new Map<string, Claim>();
  /** Where the next pass starts in the list of webhooks: each goes first in turn. */
  private turn = 0;
  private inflight = 0;
  private readonly sends = new Set<Promise<void>>();
  private readonly loop: NudgedLoop;
  private refreshedAt = 0;
  /** Every tenant's callback signer (read with the subscriptions). */
  private signers: WebhookModel[] = [];
  /** Set at shutdown: nothing more starts, and the claims of attempts cut short are handed back. */
  private stopping = false;

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly claims: WebhookClaims,
    private readonly writer: WebhookAttemptWriter,
    private readonly poster: WebhookPoster,
    private readonly events: WebhookEvents,
    private readonly feed: TaskChangeFeed,
    private readonly secrets: WebhookSecrets,
    private readonly metrics: Metrics,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) config: SchedulerConfig,
  ) {
    this.cfg = config.outgoing.webhooks;
    this.owner = config.instanceId.slice(0, 100);
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
    this.stopping = true;
    await this.loop.stop();
    await this.poster.stop();
    await this.idle();
  }

  /** Look for due messages soon (the nudges of one moment make one pass). */
  nudge(): void {
    this.loop.nudge();
  }

  /** Once every attempt started so far has been answered and recorded (tests wait on it). */
  async idle(): Promise<void> {
    while (this.sends.size > 0) await Promise.allSettled([...this.sends]);
  }

  /** The window of attempts in flight to one endpoint (tests read it). */
  window(endpoint: string, hook?: WebhookModel): EndpointWindow {
    let w = this.windows.get(endpoint);
    if (!w) {
      const failing = hook?.kind === 'subscription' && hook.failingSince !== null;
      const settings = {
        start: this.cfg.perEndpoint,
        max: this.cfg.perEndpointMax,
        slowMs: this.cfg.slowMs,
      };
      w = new EndpointWindow(settings, failing, this.clock.now());
      this.windows.set(endpoint, w);
    }
    return w;
  }

  /**
   * One look at the due messages: claims and starts what the limits allow (tests call it). A
   * subscription's messages all go to its URL: as many are claimed as its window has room for. A
   * tenant's callbacks go to many origins, each with its own window: as many are claimed as the
   * total allows, and those whose origin has no room are handed back.
   */
  async passOnce(): Promise<void> {
    if (this.clock.now() - this.refreshedAt >= REFRESH_MS) {
      await this.events.refresh();
      this.signers = await this.repo.callbackSigners();
      this.secrets.remember(this.signers);
      this.refreshedAt = this.clock.now();
      this.forgetIdleWindows();
    }
    if (this.stopping) return;
    if (this.writer.backlog >= BACKLOG_PER_SLOT * this.cfg.concurrency) return;
    const hooks = [...this.events.enabled(), ...this.signers];
    const first = hooks.length > 0 ? this.turn++ % hooks.length : 0;
    for (const hook of [...hooks.slice(first), ...hooks.slice(0, first)]) {
      const free = this.cfg.concurrency - this.inflight;
      if (free <= 0) return;
      const now = this.clock.now();
      const room =
        hook.kind === 'subscription'
          ? Math.min(free, this.window(hook.webhookId, hook).room(now))
          : free;
      if (room <= 0) continue;
      const claimed = await this.claims.claim(
        hook.webhookId,
        this.owner,
        now,
        now + this.cfg.claimLeaseMs,
        room,
      );
      const unsent = claimed.filter((c) => this.start(c, hook) === 'unsent');
      if (unsent.length > 0) await this.claims.release(this.owner, unsent);
    }
  }

  /**
   * Sends a claimed message if its endpoint has room: 'sent'; 'unsent' to hand it back; 'held'
   * for one this instance is sending already (a claim of its own lapsed while the attempt was
   * under way, a stall, and was taken again: that attempt is recorded under the new claim, which
   * its record ends).
   */
  private start(c: Claim, hook: WebhookModel): 'sent' | 'unsent' | 'held' {
    const msg = c.message;
    if (this.own.has(msg.messageId)) {
      this.own.set(msg.messageId, c);
      return 'held';
    }
    const endpoint = msg.url === null ? hook.webhookId : originOf(msg.url);
    const window = this.window(endpoint, hook);
    const now = this.clock.now();
    if (this.stopping || this.inflight >= this.cfg.concurrency) return 'unsent';
    if (window.room(now) <= 0) return 'unsent';
    // A claim that an attempt begun now could outlast (this instance stalled since it claimed):
    // handed back rather than sent while another instance may take it.
    if (now > c.until - this.cfg.timeoutMs) return 'unsent';
    this.own.set(msg.messageId, c);
    this.inflight++;
    const ticket = window.started(now);
    const send = this.deliver(c, hook, window, ticket)
      .catch((err: unknown) =>
        this.logger.error(
          `webhook ${msg.messageId}: ${err instanceof Error ? err.message : String(err)}`,
        ),
      )
      .finally(() => {
        this.own.delete(msg.messageId);
        this.sends.delete(send);
      });
    this.sends.add(send);
    return 'sent';
  }

  /** One attempt, its answer told to the endpoint's window, and its record. */
  private async deliver(
    c: Claim,
    hook: WebhookModel,
    window: EndpointWindow,
    ticket: number,
  ): Promise<void> {
    const msg = c.message;
    let attempt: WebhookAttemptModel | undefined;
    try {
      attempt = await this.poster.post(msg, hook);
    } finally {
      this.inflight--;
      // A post that threw (it answers every failure it knows of) must not keep its slot.
      if (!attempt) window.answered(ticket, false, 0, this.clock.now());
    }
    if (this.stopping && attempt.statusCode === null) {
      // Cut short by the stop, not failed by the receiver: handed back, for another instance now.
      await this.claims.release(this.owner, [this.own.get(msg.messageId) ?? c]);
      return;
    }
    const ok = delivered(attempt);
    window.answered(ticket, ok, attempt.latencyMs, this.clock.now());
    // Its slot is free: the next message for the endpoint may go while this one is recorded.
    if (ok) this.nudge();
    else this.clock.setTimeout(() => this.nudge(), FAILING_PACE_MS).unref();
    const outcome = outcomeOf(this.cfg, msg, hook, attempt);
    try {
      await this.writer.record({
        message: msg,
        attempt,
        ...outcome,
        claim: { by: this.owner, until: (this.own.get(msg.messageId) ?? c).until },
      });
    } catch (err) {
      // The message stays claimed, then pending: it is sent again (same webhook-id) once the
      // claim lapses, at least once.
      this.logger.error(
        `webhook ${msg.messageId}: the attempt could not be recorded: ${err instanceof Error ? err.message : String(err)}`,
      );
      return;
    }
    // Recorded: the next message of the same task may go now.
    this.nudge();
    this.count(hook, attempt, outcome, msg.createdAt);
    if (outcome.disable !== null) {
      this.metrics.inc('baton_webhook_disabled_total');
      this.logger.warn(
        `webhook.disabled: ${hook.webhookId} (${hook.url ?? ''}) disabled: ${outcome.disable}`,
      );
      await this.events.refresh().catch(() => undefined);
    }
  }

  private count(
    hook: WebhookModel,
    attempt: WebhookAttemptModel,
    outcome: AttemptOutcome,
    createdAt: number,
  ): void {
    const kind = hook.kind;
    const result = outcome.status === 'delivered' ? 'delivered' : 'failed';
    this.metrics.inc('baton_webhook_attempts_total', { kind, result });
    if (outcome.status === 'delivered') {
      this.metrics.inc('baton_webhook_delivered_total', { kind });
      this.metrics.inc('baton_webhook_delivery_latency_ms_total', { kind }, attempt.at - createdAt);
    } else if (outcome.status === 'pending') {
      this.metrics.inc('baton_webhook_retries_total', { kind });
    } else {
      this.metrics.inc('baton_webhook_given_up_total', { kind });
    }
  }

  private forgetIdleWindows(): void {
    const before = this.clock.now() - WINDOW_IDLE_MS;
    for (const [endpoint, w] of this.windows)
      if (w.busy === 0 && w.usedAt < before) this.windows.delete(endpoint);
  }
}
