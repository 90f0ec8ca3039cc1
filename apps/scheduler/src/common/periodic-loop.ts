import { Logger } from '@nestjs/common';
import { Clock, Timer } from '@baton/time';

/**
 * Runs `body` every `intervalMs`, one pass at a time (the next is scheduled when the last ends),
 * logging failures instead of dying. `stop()` waits for a pass in progress.
 */
export class PeriodicLoop {
  private timer: Timer | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly intervalMs: number,
    private readonly body: () => Promise<unknown>,
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private schedule(): void {
    this.timer = this.clock.setTimeout(() => {
      const began = this.clock.now();
      // A pass that never ends stops the loop: said once, loudly, while it lasts (every backend
      // call has a bound, so this is a bug to report, never a slow backend).
      const stuck = this.clock
        .setTimeout(
          () =>
            this.logger.error(
              `a pass has been under way for ${this.clock.now() - began} ms and the loop waits on it`,
            ),
          Math.max(STUCK_AFTER_MS, 10 * this.intervalMs),
        )
        .unref();
      this.running = this.body()
        .then(() => undefined)
        .catch((err: unknown) =>
          this.logger.error(`pass failed: ${err instanceof Error ? err.message : String(err)}`),
        )
        .finally(() => {
          this.clock.clearTimeout(stuck);
          if (!this.stopped) this.schedule();
        });
    }, this.intervalMs);
  }
}

/** A pass running this long (or ten intervals, if longer) is reported as stuck. */
const STUCK_AFTER_MS = 60_000;
