import { CreateTaskDto } from '../tasks';
import { Schedule, slotsBetween } from './schedule';

/** Skip a fire while the previous fire's task is not finished, fire anyway, or cancel the previous. */
export type OverlapPolicy = 'skip' | 'allow' | 'cancel_previous';
/** After downtime: one fire for all the missed slots, a fire per missed slot, or none. */
export type MisfirePolicy = 'fire_once' | 'fire_all' | 'skip';

export const OVERLAP_POLICIES: readonly OverlapPolicy[] = ['skip', 'allow', 'cancel_previous'];
export const MISFIRE_POLICIES: readonly MisfirePolicy[] = ['fire_once', 'fire_all', 'skip'];

/** What a timer whose fires start topology runs stores instead of a task's body. */
export interface TopologyTemplate {
  topology: {
    name: string;
    version?: number;
    input?: Record<string, unknown>;
    labels?: Record<string, string>;
    tenant?: string;
    /** Each run's deadline, in place of the definition's. */
    deadline_seconds?: number;
  };
}

export type TimerTemplate = CreateTaskDto | TopologyTemplate;

export const isTopologyTemplate = (t: TimerTemplate): t is TopologyTemplate =>
  (t as Partial<TopologyTemplate>).topology !== undefined;

/** A timed definition: a task template and when to create it (docs/architecture.md). */
export interface TimerModel {
  timerId: string;
  name: string;
  tenant: string;
  schedule: Schedule;
  /** No slot before this (epoch ms). */
  startAt: number | null;
  /** No slot after this. */
  endAt: number | null;
  enabled: boolean;
  overlapPolicy: OverlapPolicy;
  misfirePolicy: MisfirePolicy;
  /** A slot later than this when it is reached is a misfire (the owner was down or taking over). */
  misfireGraceMs: number;
  /** The body of the task each fire creates, or the topology run each fire starts. */
  template: TimerTemplate;
  /** The next slot to fire; null when the schedule has no more. */
  nextFireAt: number | null;
  lastFireAt: number | null;
  lastTaskId: string | null;
  fireCount: number;
  misfireCount: number;
  skipCount: number;
  version: number;
  createdAt: number;
  updatedAt: number;
}

/**
 * A timer's next `count` fires from its next slot, in its window, by the Producer's schedule code:
 * fewer when the schedule or the window ends first.
 */
export function upcomingFires(t: TimerModel, count: number): number[] {
  if (t.nextFireAt === null) return [];
  return slotsBetween(t.schedule, t.nextFireAt, t.endAt ?? Number.MAX_SAFE_INTEGER, count);
}
