import { AllowedNetworks } from '@baton/task-contract';

/** Where webhooks and `callback_url`s may point besides the public internet, and how they retry. */
export interface WebhooksConfig {
  /** Internal networks (CIDRs) a webhook or callback may reach: none by default. */
  allowNetworks: AllowedNetworks;
  /** Host names allowed whatever they resolve to (lower case, no trailing dot). */
  allowHosts: ReadonlySet<string>;
  /** The waits between attempts; the last repeats until `retryForMs` has passed. */
  retryScheduleMs: readonly number[];
  /** How long a message is tried before it is given up (from its first attempt's due time). */
  retryForMs: number;
  /** A subscription whose deliveries all failed for this long is disabled. */
  disableAfterMs: number;
  /** One attempt's limit: connect, answer and body. */
  timeoutMs: number;
  /**
   * Attempts in flight from one instance to one subscription (or callback origin) at first: the
   * window then grows by as much per window of fast 2xx answers, up to `perEndpointMax`, and
   * halves on a failure, a timeout or a slow answer, down to one.
   */
  perEndpoint: number;
  /** The most attempts in flight from one instance to one endpoint, however well it answers. */
  perEndpointMax: number;
  /** A 2xx answer that took this long or more shrinks the endpoint's window as a failure does. */
  slowMs: number;
  /** Attempts in flight from this instance at a time. */
  concurrency: number;
  /**
   * How long a message claimed by an instance is its alone: longer than an attempt may take, so
   * that only a claim whose instance died (or stalled) lapses and is taken by another.
   */
  claimLeaseMs: number;
  /** Delivered and given-up messages, and the attempt log, are kept this long. */
  logRetentionMs: number;
  /** A rotated-out secret still signs for this long. */
  secretOverlapMs: number;
  /** How often the sender looks for due messages when nothing woke it. */
  pollMs: number;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `500ms`, `5s`, `2m`, `1h`, `3d` (a bare number is milliseconds). */
export function parseDuration(name: string, raw: string): number {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(raw.trim());
  if (!m) throw new Error(`${name}: ${JSON.stringify(raw)} is not a duration (5s, 2m, 1h, 3d)`);
  return Number(m[1]) * UNITS[m[2] ?? 'ms'];
}

const HOST =
  /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

export function webhooksConfig(env: NodeJS.ProcessEnv): WebhooksConfig {
  const duration = (name: string, fallback: string, min: number, max: number): number => {
    const ms = parseDuration(name, env[name] || fallback);
    if (ms < min || ms > max)
      throw new Error(`${name} must be between ${min} ms and ${max} ms, got ${env[name]}`);
    return ms;
  };
  const count = (name: string, fallback: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > max)
      throw new Error(`${name} must be an integer in [1, ${max}], got ${JSON.stringify(raw)}`);
    return n;
  };
  // BATON_CALLBACK_NETWORKS is the older name of the networks part; both are read.
  const entries = [env.BATON_WEBHOOK_ALLOW, env.BATON_CALLBACK_NETWORKS]
    .flatMap((v) => (v ?? '').split(','))
    .map((s) => s.trim())
    .filter(Boolean);
  const cidrs: string[] = [];
  const hosts = new Set<string>();
  for (const e of entries) {
    if (/^[0-9.]+(\/\d+)?$/.test(e) || e.includes(':')) cidrs.push(e);
    else if (HOST.test(e.toLowerCase().replace(/\.$/, '')))
      hosts.add(e.toLowerCase().replace(/\.$/, ''));
    else throw new Error(`BATON_WEBHOOK_ALLOW: ${e} is neither a network (CIDR) nor a host name`);
  }
  let allowNetworks: AllowedNetworks;
  try {
    allowNetworks = new AllowedNetworks(cidrs);
  } catch (err) {
    throw new Error(`BATON_WEBHOOK_ALLOW: ${(err as Error).message}`);
  }
  const schedule = (env.BATON_WEBHOOK_RETRY_SCHEDULE || '5s,30s,2m,10m,1h,6h')
    .split(',')
    .map((s) => parseDuration('BATON_WEBHOOK_RETRY_SCHEDULE', s));
  if (schedule.length === 0 || schedule.some((ms) => ms < 10 || ms > 7 * 86_400_000))
    throw new Error('BATON_WEBHOOK_RETRY_SCHEDULE: each wait must be between 10 ms and 7 days');
  const timeoutMs = duration('BATON_WEBHOOK_TIMEOUT', '10s', 100, 600_000);
  const perEndpoint = count('BATON_WEBHOOK_PER_ENDPOINT', 4, 1000);
  const concurrency = count('BATON_WEBHOOK_CONCURRENCY', 128, 10_000);
  // A per-endpoint limit set alone (from before the window grew) stays the limit: a fragile
  // receiver someone protected with it gets no more. Otherwise one endpoint may take at most half
  // of an instance's attempts in flight, so a receiver that hangs leaves room for the others.
  const perEndpointMax = count(
    'BATON_WEBHOOK_PER_ENDPOINT_MAX',
    (env.BATON_WEBHOOK_PER_ENDPOINT ?? '') !== ''
      ? perEndpoint
      : Math.max(perEndpoint, Math.min(64, Math.floor(concurrency / 2))),
    1000,
  );
  if (perEndpointMax < perEndpoint)
    throw new Error(
      `BATON_WEBHOOK_PER_ENDPOINT_MAX (${perEndpointMax}) must be at least BATON_WEBHOOK_PER_ENDPOINT (${perEndpoint})`,
    );
  return {
    allowNetworks,
    allowHosts: hosts,
    retryScheduleMs: schedule,
    retryForMs: duration('BATON_WEBHOOK_RETRY_FOR', '3d', 0, 30 * 86_400_000),
    disableAfterMs: duration('BATON_WEBHOOK_DISABLE_AFTER', '5d', 1000, 90 * 86_400_000),
    timeoutMs,
    perEndpoint,
    perEndpointMax,
    slowMs: duration(
      'BATON_WEBHOOK_SLOW',
      `${Math.min(2000, Math.floor(timeoutMs / 2))}ms`,
      10,
      timeoutMs,
    ),
    concurrency,
    // An attempt in flight when its claim lapsed would be sent twice: the lease outlasts it.
    claimLeaseMs: duration(
      'BATON_WEBHOOK_CLAIM_LEASE',
      `${timeoutMs + 5000}ms`,
      timeoutMs + 1000,
      3_600_000,
    ),
    logRetentionMs: duration('BATON_WEBHOOK_LOG_RETENTION', '7d', 60_000, 365 * 86_400_000),
    secretOverlapMs: duration('BATON_WEBHOOK_SECRET_OVERLAP', '24h', 0, 30 * 86_400_000),
    pollMs: duration('BATON_WEBHOOK_POLL', '1s', 10, 60_000),
  };
}
