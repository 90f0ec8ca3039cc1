/**
 * Renews a lease at half its TTL until stopped, and reports the first failure (BullMQ's lock
 * extender pattern). The renewal itself decides what "failure" is; the renewer only schedules.
 */
export class LeaseRenewer {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly ttlMs: number,
    private readonly renew: () => Promise<void>,
    private readonly onFailure: (error: unknown) => void,
  ) {}

  /** Schedules the first renewal at half the TTL. */
  start(): void {
    this.schedule();
  }

  /** Stops renewing; an in-flight renewal finishes but schedules nothing more. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), Math.max(10, Math.floor(this.ttlMs / 2)));
    // A renewal alone must not keep a process alive.
    this.timer.unref();
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
