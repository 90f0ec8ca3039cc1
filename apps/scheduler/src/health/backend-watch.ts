import { Logger } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { Clock, Timer } from '../common';

export { backendUnreachable } from '../common';
import { BackendCheckConfig } from '../config';

/** The shared backends whose outage the API answers for at once. */
export type WatchedBackend = 'database' | 'queue';

interface Outage {
  since: number;
  reason: string;
}

/**
 * Whether the shared backends answer, kept up to date by a round trip to each every
 * `intervalMs`: one not answered within `timeoutMs`, or refused, marks the backend down at once,
 * and the first answered marks it up. The API reads this to refuse at once (503 with
 * Retry-After) instead of letting requests wait out a partition, and to end the requests already
 * waiting when the outage is found. One warning when an outage starts and one when it ends, with
 * its length.
 */
export class BackendWatch {
  private readonly outages = new Map<WatchedBackend, Outage>();
  private readonly listeners = new Set<(backend: WatchedBackend) => void>();
  private readonly timers = new Map<WatchedBackend, Timer>();
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly config: BackendCheckConfig,
    private readonly logger: Logger,
  ) {}

  /**
   * Checks `backend` with `ping` from now on (the first at once). `abandon` is called when a
   * check times out: what the ping waits on (a connection) is not to be used again.
   */
  watch(backend: WatchedBackend, ping: () => Promise<unknown>, abandon?: () => void): void {
    const pass = async (): Promise<void> => {
      let problem: string | undefined;
      // The clock's deadline, not a bare timer: when this process itself was starved or frozen
      // (a loaded box, a long GC), its timer runs late and the answer may sit unread in the
      // socket; the deadline then gives the process running time to read it before the backend
      // counts as silent. Otherwise a busy instance would find its healthy database "down", drop
      // its pool and refuse every request.
      const limit = this.clock.deadline(this.config.timeoutMs);
      try {
        await Promise.race([
          ping(),
          new Promise<never>((_, reject) => {
            limit.signal.addEventListener(
              'abort',
              () => {
                abandon?.();
                reject(new Error(`no answer within ${this.config.timeoutMs} ms`));
              },
              { once: true },
            );
          }),
        ]);
      } catch (err) {
        problem = err instanceof Error ? err.message : String(err);
      } finally {
        limit.cancel();
      }
      if (!this.stopped) this.record(backend, problem);
    };
    const next = (): void => {
      if (this.stopped) return;
      void pass().finally(() => {
        if (this.stopped) return;
        const timer = this.clock.setTimeout(next, this.config.intervalMs);
        timer.unref?.();
        this.timers.set(backend, timer);
      });
    };
    next();
  }

  /** Stops checking; a check under way ends by its timeout and records nothing. */
  stop(): void {
    this.stopped = true;
    for (const timer of this.timers.values()) this.clock.clearTimeout(timer);
  }

  /** What a round trip found: an outage starts or ends here. */
  record(backend: WatchedBackend, problem: string | undefined): void {
    const outage = this.outages.get(backend);
    const now = this.clock.now();
    if (problem !== undefined && !outage) {
      this.outages.set(backend, { since: now, reason: problem });
      this.logger.warn(
        `the ${backend} did not answer (${problem}): this instance is not ready, and API requests that need it answer 503 until it does`,
      );
      for (const listener of [...this.listeners]) listener(backend);
    } else if (problem === undefined && outage) {
      this.outages.delete(backend);
      this.logger.warn(
        `the ${backend} answers again, after ${((now - outage.since) / 1000).toFixed(1)} s without it (${outage.reason})`,
      );
    }
  }

  /** The outage of `backend` under way, if any. */
  outage(backend: WatchedBackend): Outage | undefined {
    return this.outages.get(backend);
  }

  /** Calls `listener` whenever an outage starts; returns what stops it. */
  onDown(listener: (backend: WatchedBackend) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The 503 an API request that needs `backend` gets now, or undefined while it answers.
   * `underWay`: the request had started (its effect is unknown), not refused on arrival.
   */
  refusal(backend: WatchedBackend = 'database', underWay = false): ContractException | undefined {
    const outage = this.outages.get(backend);
    if (!outage) return undefined;
    return this.notReady(backend, outage.reason, this.clock.now() - outage.since, underWay);
  }

  /** The 503 for an error that says `backend` did not answer (a timeout, a lost connection). */
  unreachable(backend: WatchedBackend, err: unknown): ContractException {
    const reason = err instanceof Error ? err.message : String(err);
    return this.notReady(backend, reason, 0, true);
  }

  /** Seconds a refused client should wait: about when the next check may find it back. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((this.config.intervalMs + this.config.timeoutMs) / 1000));
  }

  private notReady(
    backend: WatchedBackend,
    reason: string,
    forMs: number,
    underWay: boolean,
  ): ContractException {
    const retry = this.retryAfterSeconds;
    const already = forMs > 0 ? ` for ${(forMs / 1000).toFixed(1)} s` : '';
    const done = underWay
      ? 'the request was under way and may or may not have taken effect'
      : 'nothing was done';
    return new ContractException(
      ContractErrorCode.NOT_READY,
      `the ${backend} does not answer${already} (${reason}); ${done}: retry in ${retry} s, on another instance if there is one (with the same Idempotency-Key, a create is safe to send again)`,
      { backend, retry_after_seconds: retry },
    );
  }
}
