import { Inject, Injectable } from '@nestjs/common';
import { Agent, request } from 'undici';
import { guardedLookup, OutgoingAllowList, outgoingUrlProblem } from '@baton/task-contract';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig, WebhooksConfig } from '../config';
import { WebhookSecrets } from './webhook-secrets';
import { WebhookAttemptModel, WebhookMessageModel, WebhookModel } from './webhook.model';

/** The most of an answer kept in the delivery log. */
const RESPONSE_BYTES = 1024;
/** URLs whose check is kept (then forgotten all at once, and made again as they come). */
const VERDICTS = 10_000;

/**
 * One POST of a webhook message, signed, to an address the allow-list lets it reach, bounded by
 * BATON_WEBHOOK_TIMEOUT; its answer (or its error) as the delivery log keeps it. `stop` ends the
 * attempts in flight at once (the process is stopping).
 */
@Injectable()
export class WebhookPoster {
  private readonly cfg: WebhooksConfig;
  private readonly allow: OutgoingAllowList;
  private readonly agent: Agent;
  private readonly sentBy: string;
  /**
   * Each URL's problem with the allow-list (null: none), as checked on its literal address and
   * scheme: the same for every attempt at it, and making the check's address objects cost more
   * than the rest of an attempt's own work.
   */
  private readonly verdicts = new Map<string, string | null>();

  constructor(
    private readonly secrets: WebhookSecrets,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) config: SchedulerConfig,
  ) {
    this.cfg = config.outgoing.webhooks;
    this.sentBy = config.instanceId.slice(0, 100);
    this.allow = { networks: this.cfg.allowNetworks, hosts: this.cfg.allowHosts };
    this.agent = new Agent({
      connect: { lookup: guardedLookup(this.allow), timeout: this.cfg.timeoutMs },
      headersTimeout: this.cfg.timeoutMs,
      bodyTimeout: this.cfg.timeoutMs,
      keepAliveTimeout: 4000,
    });
  }

  /** Ends the attempts in flight now: each answers its caller with an error, at once. */
  async stop(): Promise<void> {
    await this.agent.destroy(new Error('the scheduler is stopping')).catch(() => undefined);
  }

  /** One attempt at the message. */
  async post(msg: WebhookMessageModel, hook: WebhookModel): Promise<WebhookAttemptModel> {
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
      sentBy: this.sentBy,
    });
    const problem = this.problemOf(url);
    if (problem !== null) return done(null, null, `refused: the URL ${problem}`);
    const at = new Date(started);
    const deadline = this.clock.deadline(this.cfg.timeoutMs);
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

  /** Literal addresses and schemes here; names are checked on the address connected to. */
  private problemOf(url: string): string | null {
    let problem = this.verdicts.get(url);
    if (problem === undefined) {
      problem = this.allow.hosts.has(hostOf(url))
        ? null
        : (outgoingUrlProblem(url, this.allow.networks, 'refuse', 'BATON_WEBHOOK_ALLOW') ?? null);
      if (this.verdicts.size >= VERDICTS) this.verdicts.clear();
      this.verdicts.set(url, problem);
    }
    return problem;
  }
}

/** Where a callback's attempts count: its URL's origin. */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
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
