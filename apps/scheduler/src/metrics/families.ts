/** A metric family of the scheduler: what `GET /metrics` says of it in HELP, its kind and labels. */
export interface Family {
  help: string;
  kind: 'counter' | 'gauge' | 'histogram';
  labels: readonly string[];
  /** Histograms: the upper bounds of the buckets (seconds unless the name says otherwise). */
  buckets?: readonly number[];
}

/** Said in the HELP of every counter and histogram: they are not shared between instances. */
const PER_PROCESS = 'Per process, since it started: sum over instances.';
/** Said in the HELP of the gauges read from the database. */
const SHARED =
  'Read from the database (cached a few seconds): every instance reports the same value; take max, not sum, over instances.';

const LATENCY = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const WAIT = [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600];
const RUN = [0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600];

const counter = (help: string, ...labels: string[]): Family => ({
  help: `${help} ${PER_PROCESS}`,
  kind: 'counter',
  labels,
});
const histogram = (help: string, buckets: readonly number[], ...labels: string[]): Family => ({
  help: `${help} ${PER_PROCESS}`,
  kind: 'histogram',
  labels,
  buckets,
});
const gauge = (help: string, ...labels: string[]): Family => ({ help, kind: 'gauge', labels });
const shared = (help: string, ...labels: string[]): Family => gauge(`${help} ${SHARED}`, ...labels);

const logRecords = (what: string): Family =>
  counter(`LogDumper records ${what}, by source.`, 'source');

/**
 * Every metric family of the scheduler. A name used with `Metrics` must be here (a unit test reads
 * the sources to make sure): its labels are fixed, and none of them is a task id, so the number of
 * series stays bounded by task types, statuses, timers, sources and lanes.
 */
export const FAMILIES = {
  // Tasks.
  baton_task_transitions_total: counter(
    'Task status moves this instance committed, by type and from/to status (from "" for a new task).',
    'task_type',
    'from',
    'to',
  ),
  baton_tasks_finished_total: counter(
    'Tasks that reached FINISH, by type and outcome (SUCCESS, FAIL, ROLLBACK, CANCELLED), counted by the instance that relayed the change.',
    'task_type',
    'outcome',
  ),
  baton_tasks: shared(
    'Tasks stored, by type and status (maintained with each change, not counted by a scan).',
    'task_type',
    'status',
  ),
  baton_task_backlog: shared(
    'Tasks that should have started and wait for an attempt (INIT, POSTPONE, NONE, or FAIL with a retry to come; no start_time or one passed), by type and priority: the signal to scale workers on.',
    'task_type',
    'priority',
  ),
  baton_task_backlog_oldest_seconds: shared(
    'How long the oldest task of the backlog has waited since it was due (its start_time, else its creation), by type.',
    'task_type',
  ),
  baton_task_start_delay_seconds: histogram(
    "From a task's due time (its start_time, or its creation) to its worker accepting the first attempt, by type.",
    WAIT,
    'task_type',
  ),
  baton_task_run_duration_seconds: histogram(
    'From the start of a task (its first RUNNING) to FINISH, by type and outcome.',
    RUN,
    'task_type',
    'outcome',
  ),
  baton_permanent_restarts_total: counter(
    'Permanent tasks started again after they ended, by type.',
    'task_type',
  ),
  baton_retention_purged_total: counter(
    'Finished tasks removed by retention, by type.',
    'task_type',
  ),
  baton_group_commit_retries_total: counter(
    'Groups of task changes written again row by row because one change lost its race.',
  ),
  // Driving tasks.
  baton_worker_call_duration_seconds: histogram(
    'Calls to workers by action (create, run, query, ...) and outcome (ok, refused, unreachable, timeout, error), with their latency.',
    LATENCY,
    'action',
    'outcome',
  ),
  baton_claims_total: counter(
    'Tasks this instance asked to claim, by result: claimed, or missed (claimed by another, or no longer drivable).',
    'result',
  ),
  baton_lease_renewals_total: counter(
    'Renewals of the claim on a task being driven, by result: renewed, lost (another instance took the claim, or the row moved on), error. A renewal that finds the drive itself let the task rest is not counted.',
    'result',
  ),
  baton_worker_registrations_refused_total: counter(
    'Worker registrations refused, by reason: contract_version (the worker speaks a contract older than BATON_MIN_WORKER_CONTRACT). Alert on any: such a worker takes no task.',
    'reason',
  ),
  baton_outcome_conflicts_total: counter(
    'Outcomes a worker reported that contradict the recorded one (SUCCESS for an attempt recorded FAIL), by type: each is also an event on its task.',
    'task_type',
  ),
  baton_task_start_waits_total: counter(
    'Starts put off (the task waits in POSTPONE), by type and reason: start_time, rate_limit, concurrency_limit, lock_key, no_worker.',
    'task_type',
    'reason',
  ),
  baton_queue_depth: gauge(
    'Entries waiting in each queue lane (as the queue backend reports them).',
    'lane',
  ),
  baton_workers: shared(
    'Registered worker instances, by task type and health: healthy, stale (no heartbeat), blacklisted.',
    'task_type',
    'health',
  ),
  // Locks.
  baton_lock_acquire_seconds: histogram(
    'Time to take a lock, by driver and result (acquired, busy, error).',
    LATENCY,
    'driver',
    'result',
  ),
  baton_lock_hold_seconds: histogram('How long locks were held, by driver.', RUN, 'driver'),
  baton_lock_contention_total: counter(
    'Lock requests refused because a key stayed held by someone else for the whole wait, by driver.',
    'driver',
  ),
  // Timers.
  baton_timer_fires_total: counter('Timer slots fired (a task or run created), by timer.', 'timer'),
  baton_timer_fire_duplicates_total: counter(
    'Timer slots found already fired (by another instance or before a crash), by timer.',
    'timer',
  ),
  baton_timer_fire_errors_total: counter(
    'Timer passes that failed and will be tried again, by timer.',
    'timer',
  ),
  baton_timer_fire_refused_total: counter(
    'Timer slots not fired because the template was refused, by timer.',
    'timer',
  ),
  baton_timer_misfires_total: counter(
    'Timer slots reached later than their misfire grace, by timer.',
    'timer',
  ),
  baton_timer_overlap_skips_total: counter(
    'Timer slots skipped because the previous task still ran (overlap skip), by timer.',
    'timer',
  ),
  baton_timer_overlap_cancels_total: counter(
    'Previous tasks cancelled by a new slot (overlap cancel_previous), by timer.',
    'timer',
  ),
  baton_timer_lateness_seconds: histogram('How late timer slots fired after their time.', WAIT),
  // LogDumper.
  baton_log_records_ingested_total: logRecords('read (well-formed or not)'),
  baton_log_records_dropped_total: logRecords('that could not be read'),
  baton_log_records_unmatched_total: logRecords('no enabled rule matched'),
  baton_log_records_matched_total: logRecords('matched by a rule (one per record and rule)'),
  baton_log_records_created_total: logRecords('that created a task'),
  baton_log_records_duplicate_total: logRecords('whose task already existed (a replay)'),
  baton_log_records_rejected_total: logRecords('whose task the create validation refused'),
  // Webhooks.
  baton_webhook_attempts_total: counter(
    'Webhook delivery attempts, by kind (subscription, callback) and result (delivered, failed).',
    'kind',
    'result',
  ),
  baton_webhook_delivered_total: counter('Webhook messages delivered, by kind.', 'kind'),
  baton_webhook_delivery_latency_ms_total: counter(
    'Milliseconds from event to delivery, summed over delivered messages (divide by baton_webhook_delivered_total), by kind.',
    'kind',
  ),
  baton_webhook_retries_total: counter(
    'Webhook attempts that failed and will be retried, by kind.',
    'kind',
  ),
  baton_webhook_given_up_total: counter(
    'Webhook messages given up on after their last retry, by kind.',
    'kind',
  ),
  baton_webhook_disabled_total: counter(
    'Webhook subscriptions disabled (410 Gone, or failing too long).',
  ),
  baton_webhook_queue_depth: shared('Webhook messages waiting to be delivered.'),
} satisfies Record<string, Family>;

export type FamilyName = keyof typeof FAMILIES;
