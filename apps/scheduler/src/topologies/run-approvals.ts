import { Injectable } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { Principal, actorOf } from '../auth';
import { Clock } from '../common';
import { TransactionRunner } from '../database';
import { ApprovalDecision, ApprovalNode, ApprovalRequest } from './node-kinds';
import { TopologyDriver } from './topology-driver';
import { TopologyRunsRepository } from './topology-runs.repository';
import { TopologiesRepository } from './topologies.repository';
import { runNotFound } from './topology-runs.service';

export type Verdict = 'approve' | 'reject';

/** A run waiting on a person: the approval node, what it asks, and until when. */
export interface PendingApproval {
  runId: string;
  name: string;
  version: number;
  tenant: string;
  node: string;
  request: ApprovalRequest;
  requestedAt: number;
}

/**
 * Whether `who` may decide an approval that names these approvers: an operator or admin key that
 * is one of the keys named or of the roles named (none named: any). With the API open (no keys)
 * every caller.
 */
export function mayDecide(
  who: Principal | undefined,
  approvers: ApprovalRequest['approvers'],
): boolean {
  // The API open (no keys): anyone. A person signed in is held to the rules as a key is.
  if (!who || (!who.keyId && !who.user)) return true;
  // A viewer reads; it never decides, even when named.
  if (who.role !== 'operator' && who.role !== 'admin') return false;
  if (approvers.keys.length === 0 && approvers.roles.length === 0) return true;
  // A key is named by its name; a person as the logs name them (`user:<email>`), so a person
  // can never pass for a key of the same name.
  const named = who.user ? `user:${who.user}` : who.name;
  return approvers.keys.includes(named) || approvers.roles.includes(who.role);
}

/**
 * People's decisions on approval nodes: checked against who the node allows (and the run's
 * tenant), written on the node's row under the run's lock (a decision and the timeout, or two
 * people, cannot both win), then the run goes on.
 */
@Injectable()
export class RunApprovals {
  constructor(
    private readonly defs: TopologiesRepository,
    private readonly runs: TopologyRunsRepository,
    private readonly driver: TopologyDriver,
    private readonly tx: TransactionRunner,
    private readonly clock: Clock,
  ) {}

  async decide(
    runId: string,
    key: string,
    verdict: Verdict,
    comment: string | null,
    who: Principal | undefined,
  ): Promise<void> {
    const run = await this.runs.get(runId);
    if (!run || (who?.tenant && who.tenant !== run.tenant)) throw runNotFound(runId);
    const spec = (await this.defs.get(run.name, run.version))?.spec;
    const node = spec?.nodes.find((n) => n.key === key);
    if (!node)
      throw new ContractException(ContractErrorCode.NOT_FOUND, `run ${runId} has no node ${key}`, {
        run_id: runId,
        node: key,
      });
    if (!('approval' in node))
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `node ${key} is not an approval node: only an approval is approved or rejected`,
        { run_id: runId, node: key },
      );
    const actor = actorOf(who);
    await this.tx.run(async (m) => {
      await this.runs.lock(m, runId);
      const row = (await this.runs.nodes(runId, m)).find((r) => r.key === key && r.item === 0);
      const request = row?.result as unknown as ApprovalRequest | undefined;
      if (!row || row.state !== 'waiting' || request?.approval !== true)
        throw new ContractException(
          ContractErrorCode.ILLEGAL_TRANSITION,
          `node ${key} of run ${runId} is not waiting for a decision${row ? ` (${describe(row.state, row.result)})` : ' (not reached yet)'}`,
          { run_id: runId, node: key },
        );
      const now = this.clock.now();
      if (now >= request.until)
        throw new ContractException(
          ContractErrorCode.ILLEGAL_TRANSITION,
          `node ${key} of run ${runId} waited until ${new Date(request.until).toISOString()}: its timeout decides (${request.on_timeout})`,
          { run_id: runId, node: key },
        );
      if (!mayDecide(who, request.approvers))
        throw new ContractException(
          ContractErrorCode.FORBIDDEN,
          `${actor} may not decide node ${key}: ${allowedText(node, request)}`,
          { run_id: runId, node: key },
        );
      const decision: ApprovalDecision = {
        decision: verdict === 'approve' ? 'approved' : 'rejected',
        by: actor,
        at: new Date(now).toISOString(),
        comment,
      };
      const result = { ...row.result, ...decision };
      await this.runs.moveNode(
        m,
        runId,
        key,
        0,
        'waiting',
        verdict === 'approve'
          ? { state: 'done', result }
          : {
              state: 'failed',
              result: { ...result, error: `rejected by ${actor}${comment ? `: ${comment}` : ''}` },
            },
        now,
      );
    });
    await this.driver.evaluate(runId);
  }

  /** Runs whose approval nodes wait for a decision, oldest request first (a tenant's only). */
  async pending(tenant: string | null, limit: number): Promise<PendingApproval[]> {
    const rows = await this.runs.waitingApprovals(tenant, limit);
    return rows.map((r) => ({
      runId: r.runId,
      name: r.name,
      version: r.version,
      tenant: r.tenant,
      node: r.node,
      request: r.result as unknown as ApprovalRequest,
      requestedAt: r.requestedAt,
    }));
  }
}

function describe(state: string, result: Record<string, unknown> | null): string {
  if (result?.decision) return `${String(result.decision)} by ${String(result.by)}`;
  return state === 'cancelled' ? 'cancelled' : state;
}

function allowedText(node: ApprovalNode, request: ApprovalRequest): string {
  const { keys, roles } = request.approvers;
  if (keys.length === 0 && roles.length === 0) return 'an operator or admin key decides it';
  return `it is decided by ${[
    ...(keys.length ? [`the key(s) ${keys.join(', ')}`] : []),
    ...(roles.length ? [`a key of role ${roles.join(' or ')}`] : []),
  ].join(' or ')} (node ${node.key})`;
}
