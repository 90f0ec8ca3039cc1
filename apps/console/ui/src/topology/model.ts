// The topology shapes of the API (type-only, from openapi/scheduler.v1.json) and what the pages
// say about them: node statuses with their colour class and words, and which controls a run's
// state allows (the scheduler still decides; its refusal is shown as it is).
import { parseAllDocuments } from 'yaml';
import type { components } from '../../../../../libs/scheduler-client/src/generated/scheduler.v1';

type Schemas = components['schemas'];
export type Topology = Schemas['TopologyDto'];
export type TopologyNode = Schemas['TopologyNodeDto'];
export type TopologyCheck = Schemas['TopologyCheckDto'];
export type Run = Schemas['TopologyRunDto'];
export type RunNode = Schemas['RunNodeDto'];
export type RunPage = Schemas['TopologyRunPageDto'];
export type HistoryEntry = Schemas['RunHistoryEntryDto'];
export type PendingApproval = Schemas['PendingApprovalDto'];
export type PendingApprovalPage = Schemas['PendingApprovalPageDto'];
export type RunHistory = Schemas['RunHistoryDto'];
export type NodeStatus = RunNode['status'];

/** Every node status, in the order the legend lists them, with what it means in a few words. */
export const NODE_STATUSES: readonly { status: NodeStatus; label: string; meaning: string }[] = [
  { status: 'PENDING', label: 'Pending', meaning: 'not decided yet' },
  { status: 'ACTIVE', label: 'Active', meaning: 'its task is under way, or it waits' },
  { status: 'SUCCESS', label: 'Succeeded', meaning: 'its task succeeded' },
  { status: 'FAILED', label: 'Failed', meaning: 'its task failed, or it could not start' },
  {
    status: 'UPSTREAM_FAILED',
    label: 'Upstream failed',
    meaning: 'not run: a node it needs failed',
  },
  {
    status: 'CANCELLED',
    label: 'Cancelled',
    meaning: 'stopped or never started: the run was cancelled or failed fast',
  },
  {
    status: 'SKIPPED',
    label: 'Skipped',
    meaning: 'an untaken branch, a rule that cannot be met, or a person skipped it',
  },
  { status: 'ROLLED_BACK', label: 'Rolled back', meaning: 'undone by the run’s rollback' },
];

export const statusLabel = (s: NodeStatus): string =>
  NODE_STATUSES.find((x) => x.status === s)?.label ?? s;

/** The CSS class that colours a node of this status (always drawn with its label too). */
export const statusClass = (s: NodeStatus): string =>
  `node-${s.toLowerCase().replaceAll('_', '-')}`;

/** A run's centre task rests in FINISH; until then the page keeps reading it. */
export const isFinished = (r: Pick<Run, 'status'>): boolean => r.status === 'FINISH';

export type RunAction = 'retry' | 'cancel' | 'pause' | 'continue';
export type NodeAction = 'rerun' | 'skip' | 'approve' | 'reject';

export const RUN_ACTIONS: Record<RunAction, { label: string; effect: string }> = {
  retry: {
    label: 'Retry from failed',
    effect:
      'goes on from where it stopped: succeeded nodes keep their results; failed nodes run their task again, and the nodes after them follow',
  },
  cancel: {
    label: 'Cancel run',
    effect: 'starts no node any more; node tasks under way are cancelled; nothing is rolled back',
  },
  pause: {
    label: 'Pause run',
    effect: 'starts no node until it is continued; tasks under way go on',
  },
  continue: { label: 'Continue run', effect: 'starts its nodes again where it was paused' },
};

export const NODE_ACTIONS: Record<NodeAction, { label: string; effect: string }> = {
  rerun: {
    label: 'Re-run',
    effect: 'and every node after it run again; the nodes before it keep what they did',
  },
  skip: {
    label: 'Skip',
    effect: 'is marked SKIPPED, and the nodes after it go on as if it had succeeded',
  },
  approve: {
    label: 'Approve',
    effect: 'succeeds and the run goes on; your key, the time and your comment are kept',
  },
  reject: {
    label: 'Reject',
    effect:
      'fails, and the run fails as on any failure; your key, the time and your comment are kept',
  },
};

/** An approval node waiting for a decision: what it asks (from its row), else null. */
export function approvalAsk(node: RunNode): string | null {
  if (node.kind !== 'approval' || node.status !== 'ACTIVE') return null;
  const r = node.result as { message?: string | null } | null;
  return r?.message ?? 'a decision';
}

/** Why `action` cannot be asked of the run now, or null when it can. */
export function whyNotRun(run: Run, action: RunAction): string | null {
  const ended = isFinished(run);
  switch (action) {
    case 'retry':
      if (!ended) return 'only a finished run can be retried';
      return run.outcome === 'SUCCESS' ? 'the run succeeded: nothing failed to retry' : null;
    case 'cancel':
      if (ended) return 'the run has ended';
      return run.cancel_requested ? 'a cancel is under way' : null;
    case 'pause':
      if (run.cancel_requested) return 'a cancel is under way';
      return run.status === 'RUNNING' ? null : `a run in ${run.status} cannot be paused`;
    case 'continue':
      return run.status === 'PAUSE' ? null : 'only a paused run can be continued';
  }
}

/** Why `action` cannot be asked of one node now, or null when it can. */
export function whyNotNode(run: Run, node: RunNode, action: NodeAction): string | null {
  if (run.cancel_requested) return 'a cancel is under way';
  switch (action) {
    case 'rerun':
      if (node.kind === 'topology') return 'a sub-topology node is retried with the run';
      if (node.status === 'PENDING') return 'the node has not run yet';
      return node.status === 'ACTIVE' ? 'the node is under way' : null;
    case 'approve':
    case 'reject':
      if (node.kind !== 'approval') return 'only an approval node is approved or rejected';
      return node.status === 'ACTIVE' ? null : 'the approval is not waiting for a decision';
    case 'skip':
      if (node.items) return 'a for_each node cannot be skipped';
      return ['PENDING', 'FAILED', 'UPSTREAM_FAILED', 'CANCELLED'].includes(node.status)
        ? null
        : 'only a pending, failed, upstream-failed or cancelled node can be skipped';
  }
}

/** A node's progress in percent, when its worker reported one. */
export function nodePercent(n: RunNode): number | null {
  if (n.items && n.items.total) {
    const ended = ['SUCCESS', 'FAILED', 'UPSTREAM_FAILED', 'CANCELLED', 'SKIPPED', 'ROLLED_BACK'];
    const done = ended.reduce((sum, s) => sum + (n.items?.[s] ?? 0), 0);
    return (done / n.items.total) * 100;
  }
  const p = n.progress?.percent;
  if (typeof p === 'number') return p;
  return n.status === 'SUCCESS' ? 100 : null;
}

/** A definition read from a file or pasted text: YAML (JSON is YAML too) holding one definition. */
export function parseDefinitionText(
  text: string,
): { ok: true; body: unknown } | { ok: false; error: string } {
  if (!text.trim()) return { ok: false, error: 'the file is empty' };
  if (/^\s*[[{]/.test(text)) {
    // JSON first: YAML reads most JSON too, but not all of it (tabs, for one).
    try {
      return oneDefinition(JSON.parse(text));
    } catch {
      // not JSON after all: YAML may still read it, or say what is wrong
    }
  }
  let docs;
  try {
    docs = parseAllDocuments(text);
  } catch (err) {
    return { ok: false, error: `not YAML or JSON: ${(err as Error).message}` };
  }
  const list = Array.isArray(docs) ? docs : [docs];
  const filled = list.filter((d) => d.contents !== null);
  const broken = filled.find((d) => d.errors.length > 0);
  if (broken) return { ok: false, error: `not YAML or JSON: ${broken.errors[0].message}` };
  if (filled.length !== 1)
    return {
      ok: false,
      error: `the text holds ${filled.length} definitions: import one at a time (npm run topology -- apply takes several)`,
    };
  return oneDefinition(filled[0].toJS());
}

function oneDefinition(body: unknown): { ok: true; body: unknown } | { ok: false; error: string } {
  if (Array.isArray(body)) {
    if (body.length === 1) return { ok: true, body: body[0] };
    return {
      ok: false,
      error: `the text holds a list of ${body.length} definitions: import one at a time`,
    };
  }
  if (body === null || typeof body !== 'object')
    return { ok: false, error: 'a definition is an object with a name and nodes' };
  return { ok: true, body };
}

/** The nodes of a body that may be wrong, as far as they can be drawn (keys and dependencies). */
export function drawableNodes(
  body: unknown,
): { key: string; depends_on: string[]; label: string }[] {
  const nodes = (body as { nodes?: unknown } | null)?.nodes;
  if (!Array.isArray(nodes)) return [];
  const seen = new Set<string>();
  const out: { key: string; depends_on: string[]; label: string }[] = [];
  nodes.forEach((n: unknown, i) => {
    const o = (n ?? {}) as Record<string, unknown>;
    const key = typeof o.key === 'string' && o.key && !seen.has(o.key) ? o.key : `#${i + 1}`;
    seen.add(key);
    const deps = Array.isArray(o.depends_on)
      ? o.depends_on.filter((d): d is string => typeof d === 'string')
      : [];
    out.push({ key, depends_on: deps, label: kindLabel(o) });
  });
  return out;
}

/** "demo.sleep", "for each · demo.echo", "switch", "wait", "topology failover": what a node does. */
export function kindLabel(n: Record<string, unknown>): string {
  const task = n.task as { create_info?: { task_type?: unknown } } | undefined;
  const type = typeof task?.create_info?.task_type === 'string' ? task.create_info.task_type : null;
  const handler =
    n.on_failure === true
      ? 'on failure · '
      : n.finally !== undefined && n.finally !== false
        ? 'finally · '
        : '';
  if (task) return `${handler}${n.for_each ? 'for each · ' : ''}${type ?? 'task'}`;
  if (n.switch) return `${handler}switch`;
  if (n.wait) return `${handler}wait`;
  if (n.approval) return `${handler}approval`;
  const sub = n.topology as { name?: unknown } | undefined;
  if (sub) return `${handler}topology ${typeof sub.name === 'string' ? sub.name : ''}`.trim();
  return `${handler}?`;
}
