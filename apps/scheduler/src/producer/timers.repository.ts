import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { TransactionRunner } from '../database';
import { CreateTaskDto } from '../tasks';
import { Schedule } from './schedule';
import { ProducerMemberEntity, TimerEntity } from './timer.entity';
import { MisfirePolicy, OverlapPolicy, TimerModel } from './timer.model';

const toModel = (e: TimerEntity): TimerModel => ({
  timerId: e.timer_id,
  name: e.name,
  tenant: e.tenant,
  schedule: JSON.parse(e.schedule) as Schedule,
  startAt: e.start_at,
  endAt: e.end_at,
  enabled: Number(e.enabled) === 1,
  overlapPolicy: e.overlap_policy as OverlapPolicy,
  misfirePolicy: e.misfire_policy as MisfirePolicy,
  misfireGraceMs: Number(e.misfire_grace_ms),
  template: JSON.parse(e.template) as CreateTaskDto,
  nextFireAt: e.next_fire_at,
  lastFireAt: e.last_fire_at,
  lastTaskId: e.last_task_id,
  fireCount: Number(e.fire_count),
  misfireCount: Number(e.misfire_count),
  skipCount: Number(e.skip_count),
  version: Number(e.version),
  createdAt: e.created_at,
  updatedAt: e.updated_at,
});

/** A raw row (either driver): BIGINT columns may come back as strings, and no transformer runs. */
function rowToModel(r: TimerEntity): TimerModel {
  const n = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return toModel({
    ...r,
    start_at: n(r.start_at),
    end_at: n(r.end_at),
    next_fire_at: n(r.next_fire_at),
    last_fire_at: n(r.last_fire_at),
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
  });
}

const toEntity = (m: TimerModel): TimerEntity => ({
  timer_id: m.timerId,
  name: m.name,
  tenant: m.tenant,
  schedule: JSON.stringify(m.schedule),
  start_at: m.startAt,
  end_at: m.endAt,
  enabled: m.enabled ? 1 : 0,
  overlap_policy: m.overlapPolicy,
  misfire_policy: m.misfirePolicy,
  misfire_grace_ms: m.misfireGraceMs,
  template: JSON.stringify(m.template),
  next_fire_at: m.nextFireAt,
  last_fire_at: m.lastFireAt,
  last_task_id: m.lastTaskId,
  fire_count: m.fireCount,
  misfire_count: m.misfireCount,
  skip_count: m.skipCount,
  version: m.version,
  created_at: m.createdAt,
  updated_at: m.updatedAt,
});

/** Timers and the producer member directory. Every change of a timer is a compare-and-set on version. */
@Injectable()
export class TimersRepository {
  constructor(
    private readonly db: DataSource,
    private readonly tx: TransactionRunner,
  ) {}

  async insert(m: TimerModel): Promise<void> {
    await this.db.manager.insert(TimerEntity, toEntity(m));
  }

  /** Plain SQL: the Producer reads its timer again before every fire. */
  async find(timerId: string): Promise<TimerModel | undefined> {
    const [row] = await this.select('timer_id = ?', [timerId]);
    return row ? rowToModel(row) : undefined;
  }

  /** Every timer, or one tenant's. */
  async list(tenant?: string): Promise<TimerModel[]> {
    return (
      await this.db.manager.find(TimerEntity, {
        where: tenant === undefined ? {} : { tenant },
        order: { timer_id: 'ASC' },
      })
    ).map(toModel);
  }

  /**
   * Enabled timers with a slot to fire, by `until` when given: what a Producer owner looks at.
   * Plain SQL: hydrating thousands of entities through the ORM stalled the event loop (and with
   * it every timed start) for tens of milliseconds.
   */
  async active(until?: number): Promise<TimerModel[]> {
    const rows = await this.select(
      `enabled = 1 AND next_fire_at IS NOT NULL${until === undefined ? '' : ' AND next_fire_at <= ?'}`,
      until === undefined ? [] : [until],
    );
    return rows.map(rowToModel);
  }

  /** Writes `next` if the row is still at `prev.version`; returns the stored row, or undefined. */
  async replace(prev: TimerModel, next: TimerModel): Promise<TimerModel | undefined> {
    const stored: TimerModel = { ...next, version: prev.version + 1 };
    const { timer_id: _id, ...set } = toEntity(stored);
    const columns = Object.keys(set) as (keyof typeof set)[];
    // Plain SQL: a fire is on the timed-start path, and the query builder's CPU showed there.
    const res = await this.tx.write(
      `UPDATE ${this.table} SET ${columns.map((c) => `${c} = ?`).join(', ')} WHERE timer_id = ? AND version = ?`,
      [...columns.map((c) => set[c]), prev.timerId, prev.version],
    );
    return res === 1 ? stored : undefined;
  }

  private get table(): string {
    return this.db.getMetadata(TimerEntity).tableName;
  }

  private async select(where: string, params: unknown[]): Promise<TimerEntity[]> {
    return (await this.db.query(
      `SELECT * FROM ${this.table} WHERE ${where}`,
      params,
    )) as TimerEntity[];
  }

  async remove(timerId: string): Promise<boolean> {
    const res = await this.db.manager.delete(TimerEntity, { timer_id: timerId });
    return (res.affected ?? 0) > 0;
  }

  // ---- member directory (who may be alive; the lock backend says who is) --------------------

  async upsertMember(memberId: string, now: number): Promise<void> {
    const res = await this.db.manager.update(
      ProducerMemberEntity,
      { member_id: memberId },
      { seen_at: now },
    );
    if ((res.affected ?? 0) === 0) {
      await this.db.manager
        .createQueryBuilder()
        .insert()
        .into(ProducerMemberEntity)
        .values({ member_id: memberId, joined_at: now, seen_at: now })
        .orIgnore()
        .execute();
    }
  }

  async members(): Promise<{ memberId: string; seenAt: number }[]> {
    const rows = await this.db.manager.find(ProducerMemberEntity, {
      order: { member_id: 'ASC' },
    });
    return rows.map((r) => ({ memberId: r.member_id, seenAt: r.seen_at }));
  }

  async removeMember(memberId: string): Promise<void> {
    await this.db.manager.delete(ProducerMemberEntity, { member_id: memberId });
  }
}
