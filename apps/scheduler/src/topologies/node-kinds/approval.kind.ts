import { render } from '../placeholders';
import { bad, isObject, strings } from './checks';
import { ApprovalNode, MAX_DEADLINE_SECONDS } from './node-def';
import { NodeKindSpec } from './node-kind';

/** The roles that may decide an approval (a viewer reads, it does not decide). */
export const APPROVER_ROLES = ['operator', 'admin'] as const;

/** What an approval node's row holds while it waits: what the API and the webhook tell. */
export interface ApprovalRequest {
  approval: true;
  /** When the timeout decides, and what. */
  until: number;
  on_timeout: 'approve' | 'reject';
  message: string | null;
  approvers: { keys: string[]; roles: string[] };
}

/** How an approval ended: the row's result (and the node's). */
export interface ApprovalDecision {
  decision: 'approved' | 'rejected';
  /** `key:<name>`, or `timeout`. */
  by: string;
  at: string;
  comment: string | null;
}

/**
 * A person's go-ahead: the node waits until someone allowed approves or rejects it
 * (`POST /v1/topology-runs/{id}/nodes/{key}/approve|reject`), or its timeout decides as the
 * definition says. Approved: SUCCESS, its result the decision; rejected: FAILED, with who and why.
 */
export const approvalKind: NodeKindSpec<ApprovalNode> = {
  kind: 'approval',
  fields: ['approval'],
  present: (raw) => raw.approval !== undefined,
  parse(raw, base) {
    const a = raw.approval;
    const key = base.key;
    if (!isObject(a))
      throw bad('approval must be {timeout_seconds, on_timeout, message?, approvers?}', key);
    const unknown = Object.keys(a).find(
      (k) => !['timeout_seconds', 'on_timeout', 'message', 'approvers'].includes(k),
    );
    if (unknown) throw bad(`approval has no field ${unknown}`, key);
    const t = a.timeout_seconds;
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 1 || t > MAX_DEADLINE_SECONDS)
      throw bad(
        `approval.timeout_seconds is required: a whole number of seconds from 1 to ${MAX_DEADLINE_SECONDS}`,
        key,
      );
    if (a.on_timeout !== 'approve' && a.on_timeout !== 'reject')
      throw bad('approval.on_timeout is required: "approve" or "reject"', key);
    if (a.message !== undefined && (typeof a.message !== 'string' || a.message.length > 1000))
      throw bad('approval.message must be a string of at most 1,000 characters', key);
    const who = a.approvers ?? {};
    if (!isObject(who)) throw bad('approval.approvers must be {keys?, roles?}', key);
    const keys = who.keys ?? [];
    const roles = who.roles ?? [];
    if (!strings(keys) || keys.length > 100)
      throw bad('approval.approvers.keys must be a list of API key names', key);
    if (!strings(roles) || roles.some((r) => !(APPROVER_ROLES as readonly string[]).includes(r)))
      throw bad(`approval.approvers.roles must be a list of ${APPROVER_ROLES.join(', ')}`, key);
    return {
      ...base,
      approval: {
        timeout_seconds: t,
        on_timeout: a.on_timeout,
        ...(a.message !== undefined ? { message: a.message } : {}),
        ...(keys.length || roles.length ? { approvers: { keys, roles } } : {}),
      },
    };
  },
  templates: (n) => [n.approval.message ?? ''],
  start(n, _v, e) {
    const a = n.approval;
    const request: ApprovalRequest = {
      approval: true,
      until: e.run.now + a.timeout_seconds * 1000,
      on_timeout: a.on_timeout,
      message: a.message !== undefined ? String(render(a.message, e.scope())) : null,
      approvers: { keys: a.approvers?.keys ?? [], roles: a.approvers?.roles ?? [] },
    };
    e.record(n, 0, 'waiting', request as unknown as Record<string, unknown>);
    e.set(n.key, 'ACTIVE');
    e.plan.wakeAt = Math.min(e.plan.wakeAt ?? Infinity, request.until);
  },
  advance(n, v, e) {
    const row = v.row;
    if (row?.state !== 'waiting' || row.result?.approval !== true) return;
    const until = Number(row.result.until);
    if (until > e.run.now) {
      e.plan.wakeAt = Math.min(e.plan.wakeAt ?? Infinity, until);
      return;
    }
    // Nobody decided in time: the definition's choice, said as such.
    const approve = row.result.on_timeout === 'approve';
    const decision: ApprovalDecision = {
      decision: approve ? 'approved' : 'rejected',
      by: 'timeout',
      at: new Date(until).toISOString(),
      comment: null,
    };
    const result = { ...row.result, ...decision };
    // The waiting row moves (it is there): never written anew.
    if (approve) {
      e.plan.rows.push({ key: n.key, item: 0, state: 'done', result, from: 'waiting' });
      e.set(n.key, 'SUCCESS', decision);
    } else {
      const error = `no decision within ${n.approval.timeout_seconds} s: rejected by its timeout`;
      e.plan.rows.push({
        key: n.key,
        item: 0,
        state: 'failed',
        result: { ...result, error },
        from: 'waiting',
      });
      e.set(n.key, 'FAILED', { error });
    }
  },
};
