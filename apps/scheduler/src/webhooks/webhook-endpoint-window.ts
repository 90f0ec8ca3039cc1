/** After a failed attempt, the endpoint's next attempt waits this long. */
export const FAILING_PACE_MS = 100;

/** How an endpoint's window is sized (BATON_WEBHOOK_PER_ENDPOINT, _PER_ENDPOINT_MAX, _SLOW). */
export interface WindowSettings {
  start: number;
  max: number;
  slowMs: number;
}

/**
 * How many attempts this instance keeps in flight to one endpoint (a subscription, or a callback
 * origin): additive increase, multiplicative decrease, as TCP paces a connection. Each window of
 * fast 2xx answers lets as many more attempts out as the window started with (4: from 4 to 64 in
 * fifteen rounds, where one at a time took a backlog of seconds to reach a thousand a second), up
 * to the bound; a failure, a timeout or a slow answer halves it, down to one. The attempts that were in flight when it was halved met the same
 * trouble: their answers do not halve it again, so a burst of failures is one step down, and a
 * receiver that keeps failing is stepped down once per round of attempts. After a failure the
 * endpoint also waits FAILING_PACE_MS before its next attempt: a dead receiver is not hammered.
 */
export class EndpointWindow {
  private size: number;
  /** Fast answers since the window last grew or shrank. */
  private grown = 0;
  /** Attempts begun so far: each attempt's ticket is its number. */
  private tickets = 0;
  /** The attempts begun up to its last halving: their answers do not halve it again. */
  private shrunkAfter = 0;
  private pausedUntil = 0;
  /** The last answer was a failure (the endpoint is failing until one succeeds). */
  failing: boolean;
  /** Attempts in flight now. */
  busy = 0;
  /** When it was last used: a window idle long enough is forgotten. */
  usedAt: number;

  constructor(
    private readonly settings: WindowSettings,
    failing: boolean,
    now: number,
  ) {
    // An endpoint known to be failing starts at one attempt at a time.
    this.size = failing ? 1 : settings.start;
    this.failing = failing;
    this.usedAt = now;
  }

  /** Attempts it may have in flight. */
  get limit(): number {
    return this.size;
  }

  /** How many more attempts may start now (0 while paused after a failure). */
  room(now: number): number {
    return now < this.pausedUntil ? 0 : Math.max(0, this.size - this.busy);
  }

  /** An attempt begins: its ticket, to give back with its answer. */
  started(now: number): number {
    this.busy++;
    this.usedAt = now;
    return ++this.tickets;
  }

  /** The answer to the attempt of `ticket`, delivered (2xx) or not, after `latencyMs`. */
  answered(ticket: number, ok: boolean, latencyMs: number, now: number): void {
    this.busy = Math.max(0, this.busy - 1);
    this.usedAt = now;
    this.failing = !ok;
    if (!ok) this.pausedUntil = now + FAILING_PACE_MS;
    if (ok && latencyMs < this.settings.slowMs) {
      if (++this.grown >= this.size && this.size < this.settings.max) {
        this.size = Math.min(this.settings.max, this.size + this.settings.start);
        this.grown = 0;
      }
      return;
    }
    if (ticket <= this.shrunkAfter) return;
    this.size = Math.max(1, Math.floor(this.size / 2));
    this.grown = 0;
    this.shrunkAfter = this.tickets;
  }
}
