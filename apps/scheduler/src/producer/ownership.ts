import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { LOCK_PROVIDER, Lease, LockProvider } from '@baton/locks';
import { Clock, PeriodicLoop } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TimersRepository } from './timers.repository';

export type ProducerMode = 'standby' | 'distributed';

/** What the Producer of this instance may fire right now. */
export interface OwnershipView {
  mode: ProducerMode;
  /** standby: this instance is the leader. distributed: this instance holds its member lease. */
  active: boolean;
  /** distributed: the live members this instance sees (its ring), sorted. */
  members: string[];
}

const LEADER_KEY = 'producer:leader';
const memberKey = (id: string): string => `producer:member:${id}`;
/** Points per member on the ring: enough for an even spread over a handful of instances. */
const VNODES = 64;

function hash32(s: string): number {
  return createHash('sha1').update(s).digest().readUInt32BE(0);
}

/**
 * Decides which timers this instance fires, in one of the two models of the original design:
 *
 * - standby: one leader, elected through the lock provider (a lease on `producer:leader`,
 *   renewed at half its TTL); the others retry every third of the TTL and take over when the
 *   leader's lease is gone (process killed: its ZooKeeper session ends, its Redis/etcd/MySQL lease
 *   runs out).
 * - distributed: every instance holds a lease on `producer:member:<id>` (a ZooKeeper ephemeral
 *   node, a Redis/etcd/MySQL lease) and lists itself in a member directory in the database. An
 *   instance is live while its lease is held: the others probe each listed member with a
 *   non-blocking try on its key (taken = dead, released at once). Timers are spread over the live
 *   members by consistent hashing, so a member joining or leaving moves only its share.
 *
 * Either way two instances may believe they own a timer for a moment (a paused leader, views of
 * the ring that differ); the unique (timer, fire time) key of every fire makes that harmless.
 */
@Injectable()
export class ProducerOwnership {
  private readonly logger = new Logger('ProducerOwnership');
  private lease: Lease | undefined;
  private ring: { point: number; member: string }[] = [];
  private members: string[] = [];
  private loop: PeriodicLoop | undefined;
  private changeListeners: (() => void)[] = [];

  constructor(
    @Inject(LOCK_PROVIDER) private readonly locks: LockProvider,
    private readonly repo: TimersRepository,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  get mode(): ProducerMode {
    return this.config.producer.mode;
  }

  private get self(): string {
    return this.config.instanceId;
  }

  /** One look at once (so a lone instance leads from its first moment), then every probeMs. */
  async start(): Promise<void> {
    await this.tick();
    this.loop = new PeriodicLoop(this.clock, this.logger, this.config.producer.probeMs, () =>
      this.tick(),
    );
    this.loop.start();
  }

  async stop(): Promise<void> {
    // A look in progress finishes first: it must not take a lease after this one is let go.
    await this.loop?.stop();
    const lease = this.lease;
    this.lease = undefined;
    await lease?.release().catch(() => undefined);
    if (this.mode === 'distributed') await this.repo.removeMember(this.self).catch(() => undefined);
  }

  /** Called when what this instance owns may have changed (won or lost the lease, ring moved). */
  onChange(listener: () => void): void {
    this.changeListeners.push(listener);
  }

  view(): OwnershipView {
    return { mode: this.mode, active: this.holding(), members: [...this.members] };
  }

  /** True when this instance fires `timerId` now. */
  owns(timerId: string): boolean {
    if (!this.holding()) return false;
    if (this.mode === 'standby') return true;
    if (this.ring.length === 0) return false;
    const h = hash32(timerId);
    // The first point clockwise from the timer's hash (binary search over the sorted ring).
    let lo = 0;
    let hi = this.ring.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.ring[mid].point < h) lo = mid + 1;
      else hi = mid;
    }
    return this.ring[lo % this.ring.length].member === this.self;
  }

  private holding(): boolean {
    return (
      this.lease !== undefined &&
      !this.lease.lost &&
      this.lease.expiresAt.getTime() > this.clock.now()
    );
  }

  private async tick(): Promise<void> {
    const before = `${this.holding()}|${this.members.join(',')}`;
    try {
      await this.refresh();
    } catch (err) {
      this.logger.warn(`producer ownership: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (`${this.holding()}|${this.members.join(',')}` !== before) {
      this.logger.log(
        this.mode === 'standby'
          ? `producer leader: ${this.holding() ? 'this instance' : 'another instance'}`
          : `producer members: ${this.members.join(', ') || '(none)'}${this.holding() ? '' : ' (this instance is not a member)'}`,
      );
      for (const l of this.changeListeners) l();
    }
  }

  private async refresh(): Promise<void> {
    const ttlMs = this.config.producer.leaseMs;
    if (!this.holding()) {
      // Past its expiry but not (yet) reported lost: let it go before taking a new one.
      await this.lease?.release().catch(() => undefined);
      this.lease = undefined;
      const key = this.mode === 'standby' ? LEADER_KEY : memberKey(this.self);
      const lease = await this.locks.tryAcquire(key, { ttlMs, autoRenew: true });
      if (lease) {
        lease.onLost((reason) => {
          this.logger.warn(`producer lease ${key} lost (${reason})`);
          for (const l of this.changeListeners) l();
        });
        this.lease = lease;
      }
    }
    if (this.mode === 'distributed') await this.refreshMembers();
  }

  private async refreshMembers(): Promise<void> {
    const now = this.clock.now();
    if (this.holding()) await this.repo.upsertMember(this.self, now);
    const live: string[] = this.holding() ? [this.self] : [];
    for (const m of await this.repo.members()) {
      if (m.memberId === this.self) continue;
      // Free to take = nobody holds it = that member is gone.
      const probe = await this.locks.tryAcquire(memberKey(m.memberId), { ttlMs: 1000 });
      if (probe === null) {
        live.push(m.memberId);
        continue;
      }
      await probe.release().catch(() => undefined);
      // Long gone: forget it (a restarted member lists itself again).
      if (now - m.seenAt > 20 * this.config.producer.leaseMs)
        await this.repo.removeMember(m.memberId);
    }
    live.sort();
    if (live.join(',') !== this.members.join(',')) {
      this.members = live;
      this.ring = live
        .flatMap((member) =>
          Array.from({ length: VNODES }, (_, i) => ({ point: hash32(`${member}#${i}`), member })),
        )
        .sort((a, b) => a.point - b.point);
    }
  }
}
