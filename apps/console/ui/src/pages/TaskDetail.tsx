import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useTaskChanges } from '../live';
import { useRef, useState } from 'react';
import { ACTION_LABELS, TaskAction, cancelNote, effectOf, whyNot } from '../actions';
import { ApiError, api } from '../api';
import {
  ActionButton,
  ConfirmDialog,
  Duration,
  Empty,
  ErrorState,
  JsonBlock,
  Loading,
  Progress,
  StatusBadge,
  Time,
  useTitle,
} from '../components';
import { Link } from '../router';
import { TaskLocks } from './TaskLocks';
import { AttemptLog } from './AttemptLog';
import { Delivery, Task, TaskAttempt, TaskEvent, TaskType, progressOf } from '../types';
import { keys } from '../query-keys';

const ACTIONS: readonly TaskAction[] = [
  'pause',
  'continue',
  'cancel',
  'retry',
  'rerun',
  'rollback',
];

/** One task: status, progress, what it was given and gave, its lifecycle and attempts, actions. */
export function TaskDetail({ id }: { id: string }) {
  useTitle(`Task ${id}`);
  const client = useQueryClient();
  const live = useRef(false);
  const task = useQuery({
    queryKey: keys.task(id),
    queryFn: () => api<Task>(`/v1/tasks/${encodeURIComponent(id)}`),
    // Every second while it runs (the worker's progress is not in the stream of changes); else
    // a change read from the live stream brings it, and polling covers a stream that is down.
    refetchInterval: (q) => {
      const status = q.state.data?.task_status;
      if (status === 'RUNNING') return 1000;
      if (live.current) return 30_000;
      return status === 'FINISH' ? 10_000 : 1000;
    },
  });
  live.current = useTaskChanges({ taskIds: [id] }, () => {
    void client.invalidateQueries({ queryKey: keys.task(id) });
  });
  const version = task.data?.version;
  const events = useQuery({
    queryKey: keys.taskEvents(id, version),
    queryFn: () => api<TaskEvent[]>(`/v1/tasks/${encodeURIComponent(id)}/events`),
    enabled: version !== undefined,
    placeholderData: (prev) => prev,
  });
  const attempts = useQuery({
    queryKey: keys.taskAttempts(id, version),
    queryFn: () => api<TaskAttempt[]>(`/v1/tasks/${encodeURIComponent(id)}/attempts`),
    enabled: version !== undefined,
    placeholderData: (prev) => prev,
  });
  const deliveries = useQuery({
    queryKey: keys.taskDeliveries(id, version),
    queryFn: () => api<Delivery[]>(`/v1/tasks/${encodeURIComponent(id)}/deliveries`),
    enabled: version !== undefined,
    placeholderData: (prev) => prev,
  });
  const types = useQuery({
    queryKey: keys.taskTypes(),
    queryFn: () => api<TaskType[]>('/v1/task-types'),
    staleTime: 60_000,
  });
  const [asking, setAsking] = useState<TaskAction | null>(null);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);

  if (task.isPending) return <Loading what={`task ${id}`} />;
  if (task.isError) {
    return (
      <>
        <h1>Task {id}</h1>
        {task.error instanceof ApiError && task.error.status === 404 ? (
          <Empty>
            No such task (or not one your key may see). <Link href="/tasks">All tasks</Link>
          </Empty>
        ) : (
          <ErrorState error={task.error} what="the task" />
        )}
      </>
    );
  }
  const t = task.data;
  const type = types.data?.find((x) => x.task_type === t.task_type);

  const act = async (action: TaskAction): Promise<void> => {
    setAsking(null);
    setBusy(true);
    try {
      await api(`/v1/tasks/${encodeURIComponent(id)}/${action}`, { method: 'POST', body: {} });
      setOutcome({ ok: true, text: `${ACTION_LABELS[action]}: asked.` });
    } catch (err) {
      setOutcome({
        ok: false,
        text: `${ACTION_LABELS[action]} refused: ${err instanceof Error ? err.message : String(err)}`,
      });
    } finally {
      setBusy(false);
      await client.invalidateQueries({ queryKey: keys.task(id) });
      await client.invalidateQueries({ queryKey: keys.tasks() });
    }
  };

  const progress = progressOf(t);

  return (
    <>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/tasks">Tasks</Link> / <span aria-current="page">{t.task_id}</span>
      </nav>
      <div className="title-row">
        <h1>{t.task_name}</h1>
        <StatusBadge status={t.task_status} outcome={t.outcome} />
      </div>
      {t.waiting ? (
        <p className="callout" role="status" aria-label="Why it waits">
          <strong>Waiting:</strong> {t.waiting.message}, since <Time iso={t.waiting.since} />;
          checked {t.waiting.checks} {t.waiting.checks === 1 ? 'time' : 'times'}, last{' '}
          <Time iso={t.waiting.last_checked_at} />.
        </p>
      ) : null}

      <section aria-labelledby="progress-h" className="card">
        <h2 id="progress-h">Progress</h2>
        {progress === null ? (
          <p className="muted">The worker has reported no progress.</p>
        ) : (
          <>
            <Progress percent={progress.percent} label="Progress" />
            <p>
              {progress.step ? <strong>{progress.step}</strong> : null}
              {progress.step && progress.message ? ' · ' : null}
              {progress.message}
            </p>
          </>
        )}
        {t.cancel_requested ? <p>{cancelNote(t)}</p> : null}
      </section>

      <section aria-labelledby="actions-h">
        <h2 id="actions-h">Actions</h2>
        <div className="row">
          {ACTIONS.map((a) => (
            <ActionButton
              key={a}
              label={ACTION_LABELS[a]}
              reason={whyNot(t, a, type)}
              busy={busy}
              onClick={() => setAsking(a)}
            />
          ))}
        </div>
        {outcome ? (
          <p role="status" className={outcome.ok ? undefined : 'error'}>
            {outcome.text}
          </p>
        ) : null}
      </section>

      <section aria-labelledby="facts-h">
        <h2 id="facts-h">Details</h2>
        <dl className="facts">
          <dt>Id</dt>
          <dd className="id">{t.task_id}</dd>
          <dt>Type</dt>
          <dd>
            <Link href={`/tasks?task_type=${encodeURIComponent(t.task_type)}`}>{t.task_type}</Link>{' '}
            ({t.blocking}, {t.repetition})
          </dd>
          <dt>Tenant</dt>
          <dd>{t.tenant}</dd>
          <dt>Priority</dt>
          <dd>{t.important_level}</dd>
          <dt>Attempt</dt>
          <dd>
            {t.attempt}
            {t.max_retry !== null && t.max_retry !== undefined
              ? ` (max retries ${t.max_retry})`
              : ''}
          </dd>
          <dt>Worker</dt>
          <dd>{t.worker_id ?? <span className="muted">none yet</span>}</dd>
          <dt>Fence</dt>
          <dd>{t.fence}</dd>
          <dt>Lock keys</dt>
          <dd>
            {t.lock_keys.length ? t.lock_keys.join(', ') : <span className="muted">none</span>}
          </dd>
          <dt>Labels</dt>
          <dd>
            {Object.keys(t.labels).length ? (
              Object.entries(t.labels).map(([k, v]) => (
                <span key={k} className="label">
                  {k}: {v}
                </span>
              ))
            ) : (
              <span className="muted">none</span>
            )}
          </dd>
          {t.parent_task_id ? (
            <>
              <dt>Parent</dt>
              <dd>
                <Link href={`/tasks/${t.parent_task_id}`}>{t.parent_task_id}</Link>
              </dd>
            </>
          ) : null}
          <dt>Created</dt>
          <dd>
            <Time iso={t.created_at} />
          </dd>
          <dt>Started</dt>
          <dd>
            <Time iso={t.started_at} />
          </dd>
          <dt>Finished</dt>
          <dd>
            <Time iso={t.finished_at} />
          </dd>
          <dt>Updated</dt>
          <dd>
            <Time iso={t.updated_at} />
          </dd>
        </dl>
        <JsonBlock label="Params" value={t.params} />
        <JsonBlock label="Result" value={t.result} />
        <JsonBlock label="Error" value={t.error} open />
      </section>

      {t.lock_keys.length ? (
        <TaskLocks
          id={t.task_id}
          refreshedAt={task.dataUpdatedAt}
          finished={t.task_status === 'FINISH'}
        />
      ) : null}

      <section aria-labelledby="timeline-h">
        <h2 id="timeline-h">Lifecycle</h2>
        {events.isPending ? (
          <Loading what="the lifecycle" />
        ) : events.isError ? (
          <ErrorState error={events.error} what="the lifecycle" />
        ) : events.data.length === 0 ? (
          <Empty>No transitions yet.</Empty>
        ) : (
          <ol className="timeline">
            {events.data.map((e) => (
              <li key={e.id}>
                <Time iso={e.at} /> <span className="muted">attempt {e.attempt}</span>{' '}
                {e.from ? (
                  <>
                    <StatusBadge status={e.from} /> →{' '}
                  </>
                ) : null}
                <StatusBadge status={e.to} /> {e.reason} <span className="muted">by {e.actor}</span>
                {e.repeats > 1 ? (
                  <span className="muted">
                    {' '}
                    · found {e.repeats} times, last <Time iso={e.last_at} />
                  </span>
                ) : null}
              </li>
            ))}
          </ol>
        )}
      </section>

      <section aria-labelledby="attempts-h">
        <h2 id="attempts-h">Attempts</h2>
        {attempts.isPending ? (
          <Loading what="attempts" />
        ) : attempts.isError ? (
          <ErrorState error={attempts.error} what="attempts" />
        ) : attempts.data.length === 0 ? (
          <Empty>No attempt has started.</Empty>
        ) : (
          <div className="scroll" tabIndex={0} role="region" aria-labelledby="attempts-h">
            <table className="dense">
              <thead>
                <tr>
                  <th scope="col" className="num">
                    #
                  </th>
                  <th scope="col">Worker</th>
                  <th scope="col">Started</th>
                  <th scope="col">Took</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Error</th>
                </tr>
              </thead>
              <tbody>
                {attempts.data.map((a) => (
                  <tr key={a.attempt}>
                    <td className="num">{a.attempt}</td>
                    <td>{a.worker_id ?? <span className="muted">—</span>}</td>
                    <td>
                      <Time iso={a.started_at} />
                    </td>
                    <td>
                      {a.ended_at ? <Duration from={a.started_at} to={a.ended_at} /> : 'running'}
                    </td>
                    <td>{a.outcome ? <StatusBadge status={a.outcome} /> : '—'}</td>
                    <td>{a.error ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section aria-labelledby="log-h">
        <h2 id="log-h">Worker log</h2>
        <AttemptLog taskId={id} attempts={(attempts.data ?? []).map((a) => a.attempt)} />
      </section>

      <section aria-labelledby="deliveries-h">
        <h2 id="deliveries-h">Webhook deliveries</h2>
        {deliveries.isPending ? (
          <Loading what="deliveries" />
        ) : deliveries.isError ? (
          <ErrorState error={deliveries.error} what="deliveries" />
        ) : deliveries.data.length === 0 ? (
          <Empty>No webhook or callback message about this task.</Empty>
        ) : (
          <div className="scroll" tabIndex={0} role="region" aria-labelledby="deliveries-h">
            <table className="dense">
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">To</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="num">
                    Attempts
                  </th>
                  <th scope="col">Last answer</th>
                  <th scope="col">Made</th>
                </tr>
              </thead>
              <tbody>
                {deliveries.data.map((d) => {
                  const last = d.attempt_log[d.attempt_log.length - 1];
                  return (
                    <tr key={d.message_id}>
                      <td>{d.event_type}</td>
                      <td>{d.url ?? d.webhook_id}</td>
                      <td>
                        <span className={`badge delivery-${d.status}`}>{d.status}</span>
                      </td>
                      <td className="num">{d.attempts}</td>
                      <td>
                        {last
                          ? (last.error ??
                            `HTTP ${last.status_code ?? '?'} in ${last.latency_ms} ms`)
                          : '—'}
                      </td>
                      <td>
                        <Time iso={d.created_at} />
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </section>

      {asking ? (
        <ConfirmDialog
          title={`${ACTION_LABELS[asking]} this task?`}
          confirmLabel={ACTION_LABELS[asking]}
          onConfirm={() => void act(asking)}
          onClose={() => setAsking(null)}
        >
          <p>{effectOf(t, asking)}</p>
        </ConfirmDialog>
      ) : null}
    </>
  );
}
