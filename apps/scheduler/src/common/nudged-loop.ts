import { Logger } from '@nestjs/common';
import { Clock, Timer } from '@baton/time';

/**
 * Runs `body` when nudged and, when nothing nudges it, every `idleMs`. A nudge waits `lingerMs`
 * first (a number, or asked at each nudge), so the nudges of one moment (commits, finished sends)
 * make one pass. One pass at a time: a nudge during a pass runs another right after it. Failures
 * are logged, never thrown.
 */
export class NudgedLoop {
  private timer: Timer | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private lingering = false;
  private stopped = true;

  constructor(
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly lingerMs: number | (() => number),
    private readonly idleMs: number,
    private readonly body: () => Promise<unknown>,
  ) {}

  start(): void {
    this.stopped = false;
    this.nudge();
  }

  /** No more passes; waits for the one in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** A pass within `lingerMs` (after the current one, if one runs). */
  nudge(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.lingering) return;
    this.lingering = true;
    this.clock.clearTimeout(this.timer);
    const linger = typeof this.lingerMs === 'number' ? this.lingerMs : this.lingerMs();
    this.timer = this.clock.setTimeout(() => this.pass(), linger);
  }

  private pass(): void {
    this.lingering = false;
    this.timer = undefined;
    if (this.stopped) return;
    this.running = this.body()
      .then(() => undefined)
      .catch((err: unknown) =>
        this.logger.error(`pass failed: ${err instanceof Error ? err.message : String(err)}`),
      )
      .finally(() => {
        this.running = undefined;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.nudge();
        } else {
          this.timer = this.clock.setTimeout(() => this.pass(), this.idleMs).unref();
        }
      });
  }
}
