import { LeaseLostReason } from './lock-provider.interface';

type LostHandler = (reason: LeaseLostReason, error?: unknown) => void;

/**
 * Remembers the first backend-side loss of a held key and delivers it to the handler, also
 * when the handler is set only later: a multi-key acquire builds its lease (and sets handlers)
 * after the last key, and a watch may fire for the first key before that.
 */
export class LossLatch {
  private reason: LeaseLostReason | undefined;
  private error: unknown;
  private handler: LostHandler | undefined;

  /** The recorded loss, if any. */
  get lost(): LeaseLostReason | undefined {
    return this.reason;
  }

  /** Records the loss (first one wins) and tells the handler, if one is set. */
  report(reason: LeaseLostReason, error?: unknown): void {
    if (this.reason) return;
    this.reason = reason;
    this.error = error;
    this.handler?.(reason, error);
  }

  /** Sets (or replaces) the handler; replays a recorded loss to it synchronously. */
  setHandler(handler: LostHandler): void {
    this.handler = handler;
    if (this.reason) handler(this.reason, this.error);
  }
}
