import { CANCELLED_OUTCOME, TaskStatus } from '@baton/task-contract';
import { TasksRepository } from '../task-store';
import type { Plan } from './evaluation-plan';
import { TopologyRun, TopologyRunsRepository } from './topology-runs.repository';

/** Who the run's own moves are made by in the lifecycle log. */
export const TOPOLOGY_ACTOR = 'topology';

/**
 * A run's end, as its evaluation decided it: its centre task to FINISH with the outcome, the
 * nodes counted, what failed named, and what did not change the outcome noted in its log first.
 * A run moved meanwhile is left to its next evaluation.
 */
export async function finishRun(
  tasks: TasksRepository,
  runs: TopologyRunsRepository,
  run: TopologyRun,
  f: NonNullable<Plan['finish']>,
  now: number,
): Promise<void> {
  let centre = await tasks.findById(run.runId);
  if (!centre || centre.status === TaskStatus.FINISH) return;
  if (f.outcome === 'ROLLBACK') {
    const undone = await tasks.apply(
      centre,
      {
        to: TaskStatus.FINISH,
        patch: {
          outcome: TaskStatus.ROLLBACK,
          result: { ...(centre.result ?? {}), nodes: f.counts ?? {} },
          error: f.error ? { message: f.error, code: 'rolled_back' } : null,
          finishedAt: now,
        },
        reason: f.error ?? 'rolled back with its parent run',
        actor: TOPOLOGY_ACTOR,
      },
      now,
    );
    if (undone) await runs.setActive(run.runId, false, now);
    return;
  }
  const ok = f.outcome === 'SUCCESS';
  const reported = {
    ...(f.failedNodes?.length ? { failed_nodes: f.failedNodes } : {}),
    ...(f.optionalFailed?.length ? { optional_failed: f.optionalFailed } : {}),
    ...(f.finallyFailed?.length ? { finally_failed: f.finallyFailed } : {}),
  };
  // What did not change the outcome is told in the run's history before its end.
  const notes = [
    f.optionalFailed?.length ? `optional node(s) failed: ${f.optionalFailed.join(', ')}` : '',
    f.finallyFailed?.length ? `finally node(s) failed: ${f.finallyFailed.join(', ')}` : '',
  ].filter(Boolean);
  for (const reason of notes) {
    const noted = await tasks.apply(
      centre,
      { patch: {}, note: true, reason, actor: TOPOLOGY_ACTOR },
      now,
    );
    if (!noted) return; // moved meanwhile: the next evaluation finishes it
    centre = noted;
  }
  const done = await tasks.apply(
    centre,
    {
      to: TaskStatus.FINISH,
      via: [ok ? TaskStatus.SUCCESS : TaskStatus.FAIL],
      patch: {
        outcome: ok
          ? TaskStatus.SUCCESS
          : f.outcome === 'CANCELLED'
            ? CANCELLED_OUTCOME
            : TaskStatus.FAIL,
        result: { nodes: f.counts ?? {}, ...reported },
        error: ok
          ? null
          : {
              message: f.error ?? 'failed',
              code: f.outcome === 'CANCELLED' ? 'cancelled' : (f.reason ?? 'node_failed'),
            },
        finishedAt: now,
      },
      reason: ok ? 'every node ended' : (f.error ?? 'failed'),
      actor: TOPOLOGY_ACTOR,
    },
    now,
  );
  if (done) await runs.setActive(run.runId, false, now);
}
