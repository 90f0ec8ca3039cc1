import { randomUUID } from 'node:crypto';
import { Clock, systemClock } from '@baton/time';
import { BaseLockProvider } from '../base-lock.provider';
import { HeldKey } from '../held-key.interface';
import { LocalLockConfig } from '../lock-config.interface';
import { LockErrorCode, LockException } from '../lock.exception';
import { LockState } from '../lock-provider.interface';
import { freeState } from '../lock-state';
import { KeyWaiters } from '../wait';

interface LocalEntry {
  holder: string;
  /** The caller's `holder` label, if it gave one. */
  label: string | undefined;
  fence: number;
  expiresAt: number;
}

/** Last fence handed out by any local provider of this process. */
let lastFence = 0;

/**
 * Fences come from the wall clock in microseconds, so they keep increasing across restarts of
 * the process (assuming a sane clock and fewer than one new holder per microsecond), and from
 * a process-wide counter, so they also increase between providers of one process. The wall time
 * is the clock's wall time when the driver was built (`origin`) moved on by its monotonic clock,
 * as `performance.timeOrigin + performance.now()` is: sub-millisecond, and never set back.
 */
function nextFence(clock: Clock, origin: number): number {
  const micros = Math.floor((origin + clock.monotonic()) * 1000);
  lastFence = Math.max(lastFence + 1, micros);
  return lastFence;
}

/** In-process locks: the embedded default, enough when one process owns the work. */
export class LocalLockDriver extends BaseLockProvider {
  readonly driver = 'local' as const;
  private readonly entries = new Map<string, LocalEntry>();
  private readonly waiters: KeyWaiters;
  private readonly maxPollMs: number;
  /** Wall-clock time (epoch ms) at the clock's monotonic zero: the base of the fences. */
  private readonly fenceOrigin: number;

  constructor(config: LocalLockConfig = {}, clock: Clock = systemClock) {
    super(clock);
    this.maxPollMs = config.maxPollMs ?? 1000;
    this.waiters = new KeyWaiters(clock);
    this.fenceOrigin = clock.now() - clock.monotonic();
  }

  async acquireKey(
    key: string,
    ttlMs: number,
    deadline: number,
    label?: string,
  ): Promise<HeldKey | null> {
    for (;;) {
      if (this.closed) throw new LockException(LockErrorCode.CLOSED, 'local provider is closed');
      const now = this.clock.now();
      const entry = this.entries.get(key);
      if (!entry || entry.expiresAt <= now) {
        const fence = nextFence(this.clock, this.fenceOrigin);
        const holder = randomUUID();
        this.entries.set(key, { holder, label, fence, expiresAt: now + ttlMs });
        return {
          key,
          fence,
          takenAt: now,
          extend: async (ms) => this.extendKey(key, holder, ms),
          release: async () => this.releaseKey(key, holder),
          // In-process: nothing but the holder's own clock can take the key away.
          setLostHandler: () => undefined,
        };
      }
      if (now >= deadline) return null;
      // Woken by release; the timeout covers expiry of an abandoned holder.
      await this.waiters.wait(key, Math.min(entry.expiresAt - now, deadline - now, this.maxPollMs));
    }
  }

  /** The map is this driver's backend: what it says is what every caller of this process sees. */
  async inspectKey(key: string): Promise<LockState> {
    const entry = this.entries.get(key);
    if (!entry || entry.expiresAt <= this.clock.now()) {
      return freeState(key);
    }
    return {
      key,
      held: true,
      holder: entry.label ?? null,
      token: entry.holder,
      fence: entry.fence,
      expiresAt: new Date(entry.expiresAt),
    };
  }

  private extendKey(key: string, holder: string, ttlMs: number): void {
    const entry = this.ownedEntry(key, holder);
    entry.expiresAt = this.clock.now() + ttlMs;
  }

  private releaseKey(key: string, holder: string): void {
    this.ownedEntry(key, holder);
    // Forgotten once free: the process-wide fence counter, not the entry, keeps fences rising.
    this.entries.delete(key);
    this.waiters.notify(key);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.waiters.notifyAll();
  }

  private ownedEntry(key: string, holder: string): LocalEntry {
    const entry = this.entries.get(key);
    if (!entry || entry.holder !== holder || entry.expiresAt <= this.clock.now()) {
      throw new LockException(LockErrorCode.NOT_HOLDER, `"${key}" is not held by this lease`, {
        key,
      });
    }
    return entry;
  }
}
