import { Clock, systemClock, Timer } from '@baton/time';

/**
 * Renews a lease at half its TTL until stopped, and reports the first failure (BullMQ's lock
 * extender pattern). The renewal itself decides what "failure" is; the renewer only schedules.
 */
export class LeaseRenewer {
  private timer: Timer | undefined;
  private stopped = false;

  constructor(
    private readonly ttlMs: number,
    /** When the lease ends now: renewals are timed from it, not from the last renewal's end. */
    private readonly expiresAt: () => number,
    private readonly renew: () => Promise<void>,
    private readonly onFailure: (error: unknown) => void,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Schedules the first renewal, half a TTL before the lease ends. */
  start(): void {
    this.schedule();
  }

  /** Stops renewing; an in-flight renewal finishes but schedules nothing more. */
  stop(): void {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.stopped) return;
    // Half a TTL before the end (as AcquisitionKeeper does): a slow renewal does not push the
    // next one past the expiry.
    const due = this.expiresAt() - this.ttlMs / 2;
    this.timer = this.clock
      .setTimeout(() => void this.tick(), Math.max(10, Math.floor(due - this.clock.now())))
      // A renewal alone must not keep a process alive.
      .unref();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.renew();
      this.schedule();
    } catch (error) {
      if (!this.stopped) {
        this.stopped = true;
        this.onFailure(error);
      }
    }
  }
}
