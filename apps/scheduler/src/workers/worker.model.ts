/** A registered worker instance as services see it. */
export interface WorkerModel {
  workerId: string;
  url: string;
  taskTypes: string[];
  version: string;
  /** The worker contract it registered with (1.0.0 when it named none). */
  contractVersion: string;
  capacity: number;
  lastHeartbeatAt: number;
  consecutiveFailures: number;
  blacklistedUntil: number | null;
  registeredAt: number;
  /** Since when a person drains it: no new tasks, the ones it has finish there. */
  drainingSince: number | null;
  /** A blacklist a person set; `until` null: until it is lifted. */
  manualBlacklist: ManualBlacklist | null;
}

/** A person's blacklist of a worker: no tasks until it ends or is lifted. */
export interface ManualBlacklist {
  reason: string;
  since: number;
  until: number | null;
}
