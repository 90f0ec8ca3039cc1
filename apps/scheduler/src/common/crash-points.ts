/**
 * Named places in the engine where a test can make the scheduler die as `kill -9` would
 * (`BATON_CRASH_AT=before-run-call,...`), to prove that a crash at that exact point loses no task
 * and runs none twice. Unset in production: then a crash point is one Set lookup.
 */
export type CrashPoint =
  /** An attempt is bound to its worker (written); the create is not sent yet. */
  | 'before-create-call'
  /** The worker answered the create; nothing after it is written yet. */
  | 'after-create-call'
  /** The RUNNING write of a sync attempt is committed; the run call is not sent yet. */
  | 'before-run-call'
  /** The worker answered the run call; nothing of its answer is written yet. */
  | 'after-run-call'
  /** A timer's due slots have their tasks; the timer is not advanced yet. */
  | 'after-timer-fire'
  /** The tasks of a batch of log records exist; the file offset / stream ack is not written yet. */
  | 'after-log-tasks'
  /** A create under an Idempotency-Key header wrote its task; the stored answer is not written. */
  | 'after-idempotent-create'
  /** A move to FINISH is committed (its change-feed rows with it); no consumer has it yet. */
  | 'after-final-transition';

const armed = new Set(
  (process.env.BATON_CRASH_AT ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

/** Whether a test armed this point (to skip work that only decides whether to crash). */
export function crashArmed(name: CrashPoint): boolean {
  return armed.size > 0 && armed.has(name);
}

export function crashPoint(name: CrashPoint): void {
  if (armed.size > 0 && armed.has(name)) {
    process.stderr.write(`[baton] crash point ${name}: dying as by kill -9\n`);
    process.kill(process.pid, 'SIGKILL');
  }
}
