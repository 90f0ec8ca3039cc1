import { NodeStatus, NodeView, failedStatus } from './node-state';

/** The failure that handlers and finally-nodes read as `{{run.error}}` and `{{run.failed_nodes}}`. */
export interface RunFailure {
  error: string;
  nodes: string[];
}

/** A node that failed by itself or because of its parents, or was cancelled (not rolled back). */
export const hardFailure = (s: NodeStatus): boolean => failedStatus(s) && s !== 'ROLLED_BACK';

/** What a node's `{{nodes.KEY.error}}` reads (and the run view shows): why it failed, or null. */
export function nodeError(v: NodeView): string | null {
  if (!failedStatus(v.status) || v.status === 'ROLLED_BACK') return null;
  if (v.status === 'UPSTREAM_FAILED') return 'not run: a node it needs failed';
  if (v.status === 'CANCELLED') {
    const reason = v.row?.result?.reason ?? v.row?.result?.stopped ?? v.row?.result?.cut;
    if (reason === 'fail_fast') return 'cancelled: the run failed fast';
    if (reason === 'deadline') return "cancelled: the run's deadline passed";
    return 'cancelled';
  }
  // A node that could not start says why on its row; one that ran, in its task's error.
  const rowError = v.row?.result?.error;
  if (typeof rowError === 'string') return rowError;
  const own = v.task?.error?.message;
  if (own) return own;
  const err = (v.result as { error?: unknown } | null)?.error;
  if (typeof err === 'string') return err;
  if (v.count !== undefined) {
    const r = v.result as { failed: number; cancelled?: number };
    return `${r.failed} of ${v.count} items failed${r.cancelled ? `, ${r.cancelled} cancelled` : ''}`;
  }
  return 'failed';
}

/**
 * The run's error: each node that failed by itself, with why (at most five, then how many more);
 * when none did, the nodes cancelled or not run.
 */
export function failureMessage(failed: readonly NodeView[]): string {
  const own = failed.filter((v) => v.status === 'FAILED');
  const named = (own.length ? own : failed).map((v) =>
    v.status === 'FAILED'
      ? `node ${v.key} failed: ${nodeError(v)}`
      : `node ${v.key}: ${nodeError(v)}`,
  );
  const more = named.length > 5 ? `; and ${named.length - 5} more` : '';
  return named.slice(0, 5).join('; ') + more;
}
