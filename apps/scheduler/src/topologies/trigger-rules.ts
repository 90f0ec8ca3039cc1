import { NodeStatus, failedStatus } from './node-state';
import { TriggerRule } from './node-kinds';

/**
 * What a node's rule makes of its parents' states so far: it starts (`run`), it will never run
 * because a parent failed (`upstream_failed`) or for any other reason (`skip`), or it needs more
 * parents to end (`wait`). Airflow's meanings: a parent FAILED, UPSTREAM_FAILED, CANCELLED or
 * ROLLED_BACK counts as failed; SKIPPED as skipped.
 */
export type Verdict = 'run' | 'skip' | 'upstream_failed' | 'wait';

export function ruleVerdict(rule: TriggerRule, parents: NodeStatus[]): Verdict {
  if (parents.length === 0 || rule === 'always') return 'run';
  const n = parents.length;
  const ok = parents.filter((s) => s === 'SUCCESS').length;
  const failed = parents.filter(failedStatus).length;
  const skipped = parents.filter((s) => s === 'SKIPPED').length;
  const all = ok + failed + skipped === n;
  switch (rule) {
    case 'all_success':
      return ok === n ? 'run' : failed > 0 ? 'upstream_failed' : skipped > 0 ? 'skip' : 'wait';
    case 'all_failed':
      return failed === n ? 'run' : ok + skipped > 0 ? 'skip' : 'wait';
    case 'all_done':
      return all ? 'run' : 'wait';
    case 'all_skipped':
      return skipped === n ? 'run' : ok + failed > 0 ? 'skip' : 'wait';
    case 'one_success':
      if (ok > 0) return 'run';
      return !all ? 'wait' : skipped === n ? 'skip' : 'upstream_failed';
    case 'one_failed':
      return failed > 0 ? 'run' : all ? 'skip' : 'wait';
    case 'one_done':
      return ok + failed > 0 ? 'run' : all ? 'skip' : 'wait';
    case 'none_failed':
      return failed > 0 ? 'upstream_failed' : all ? 'run' : 'wait';
    case 'none_failed_min_one_success':
      if (failed > 0) return 'upstream_failed';
      return !all ? 'wait' : ok > 0 ? 'run' : 'skip';
    case 'none_skipped':
      return skipped > 0 ? 'skip' : all ? 'run' : 'wait';
  }
}
