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
      this.running = this.body()
        .then(() => undefined)
        .catch((err: unknown) =>
          this.logger.error(`pass failed: ${err instanceof Error ? err.message : String(err)}`),
        )
        .finally(() => {
          if (!this.stopped) this.schedule();
        });
    }, this.intervalMs);
  }
}
