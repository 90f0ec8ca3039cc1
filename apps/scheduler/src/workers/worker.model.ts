/** A registered worker instance as services see it. */
export interface WorkerModel {
  workerId: string;
  url: string;
  taskTypes: string[];
  version: string;
  capacity: number;
  lastHeartbeatAt: number;
  consecutiveFailures: number;
  blacklistedUntil: number | null;
  registeredAt: number;
}
