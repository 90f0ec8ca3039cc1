/** How the run call completes (docs/architecture.md). */
export enum BlockingKind {
  /** The run call returns the outcome. */
  SYNC = 'sync',
  /** The run call answers RUNNING at once; the outcome comes by callback or status polling. */
  ASYNC = 'async',
}

/** How often a task repeats (docs/architecture.md). */
export enum RepetitionKind {
  SIMPLE = 'simple',
  TIMED = 'timed',
  PERMANENT = 'permanent',
  TOPOLOGY = 'topology',
}

/** Events the scheduler tells a task about through the notify call. */
export enum NotifyEvent {
  CANCEL = 'cancel',
  PARENT_DONE = 'parent_done',
  DEADLINE = 'deadline',
  CUSTOM = 'custom',
}
