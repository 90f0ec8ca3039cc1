import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { TaskModel } from '../task-store';
import { ApprovalRequest } from './node-kinds';
import { NodeRow } from './node-state';
import { TopologyRun } from './topology-runs.repository';

/** An approval node of a run began to wait for a person. */
export interface ApprovalRequested {
  runId: string;
  name: string;
  version: number;
  tenant: string;
  /** The run's labels (its centre task's). */
  labels: Record<string, string>;
  node: string;
  request: ApprovalRequest;
  at: number;
  /** The run's centre task version then: its events so far come before this one. */
  centreVersion: number;
}

/** The approval nodes among rows about to be written that begin to wait. */
export function approvalsAsked(
  rows: readonly Pick<NodeRow, 'key' | 'state' | 'result'>[],
  run: TopologyRun,
  centre: TaskModel,
  now: number,
): ApprovalRequested[] {
  return rows
    .filter((r) => r.state === 'waiting' && r.result?.approval === true)
    .map((r) => ({
      runId: run.runId,
      name: run.name,
      version: run.version,
      tenant: run.tenant,
      labels: centre.labels,
      node: r.key,
      request: r.result as unknown as ApprovalRequest,
      at: now,
      centreVersion: centre.version,
    }));
}

export type ApprovalListener = (
  m: EntityManager,
  events: readonly ApprovalRequested[],
) => Promise<void>;

/**
 * Tells listeners (webhooks' `topology.approval_requested`) of approval nodes that began to wait,
 * in the transaction that wrote their rows: told once, as the row is written once.
 */
@Injectable()
export class ApprovalRequests {
  private readonly listeners: ApprovalListener[] = [];

  /** Subscribe before the application starts (`onModuleInit`). */
  listen(listener: ApprovalListener): void {
    this.listeners.push(listener);
  }

  async tell(m: EntityManager, events: readonly ApprovalRequested[]): Promise<void> {
    if (events.length === 0) return;
    for (const l of this.listeners) await l(m, events);
  }
}
