import { NodeRow } from './node-state';

/** What the evaluator knows of the run besides its nodes. */
export interface RunContext {
  runId: string;
  name: string;
  version: number;
  input: Record<string, unknown>;
  paused: boolean;
  cancelling: boolean;
  /** A run that succeeded, being undone as one node of its parent's rollback. */
  rollingBack: boolean;
  /** When the run's deadline passes (null: none). */
  deadlineAt: number | null;
  now: number;
}

/** A task (or child run) to create for a node: rendered, made in one transaction with its row. */
export interface NodeStart {
  key: string;
  item: number;
  kind: 'task' | 'topology';
  body: Record<string, unknown>;
}

/** A node whose kept task runs again (a retried run): its row moves from dormant to rerun. */
export interface NodeRerun {
  key: string;
  item: number;
  taskId: string;
  /** The attempt the task is at: the re-run is under way once it is past it. */
  from: number;
  params: Record<string, unknown> | undefined;
}

/** What one evaluation decided; applying it twice does nothing more (rows are keyed). */
export interface Plan {
  starts: NodeStart[];
  /**
   * Rows without a new task: skips, switch choices, waits, lists read, failures to start. With
   * `from`, the row is there in that state and moves; without, it is new.
   */
  rows: (Pick<NodeRow, 'key' | 'item' | 'state' | 'result'> & { from?: NodeRow['state'] })[];
  reruns: NodeRerun[];
  /** Re-runs decided before whose call did not go out (a crash between): ask again. */
  kicks: { taskId: string; from: number; params: Record<string, unknown> | undefined }[];
  /** Active node tasks to cancel (the run is being cancelled). */
  cancel: string[];
  /** Succeeded node tasks to roll back now (a failed run whose definition asks for it). */
  rollbacks: { row: NodeRow; taskId: string }[];
  /** The run is over. */
  finish?: {
    /** ROLLBACK: a run undone with its parent (rollingBack). */
    outcome: 'SUCCESS' | 'FAIL' | 'CANCELLED' | 'ROLLBACK';
    error: string | null;
    /** The nodes that failed the run (FAILED, UPSTREAM_FAILED or CANCELLED, not optional). */
    failedNodes?: string[];
    /** Optional nodes that failed: reported, not failing the run. */
    optionalFailed?: string[];
    /** Finally-nodes that failed: reported, not changing the outcome. */
    finallyFailed?: string[];
    /** How many nodes ended in each status, this evaluation's decisions included. */
    counts?: Record<string, number>;
    /** Why it failed when not (only) because nodes failed: its deadline passed. */
    reason?: 'deadline';
  };
  /** The earliest time a wait ends, to look again then. */
  wakeAt?: number;
}
