import { useQuery } from '@tanstack/react-query';
import { ApiError, api } from '../api';
import { Empty, ErrorState, Loading, StatusBadge, useTitle } from '../components';
import { Link } from '../router';
import { STATUSES, TaskCount, Worker } from '../types';

/** "Is anything wrong?": tasks by status and type, and the workers that are not healthy. */
export function Overview() {
  useTitle('Overview');
  const counts = useQuery({
    queryKey: ['task-counts'],
    queryFn: () => api<TaskCount[]>('/v1/task-counts'),
    refetchInterval: 5000,
  });
  const workers = useQuery({
    queryKey: ['workers'],
    queryFn: () => api<Worker[]>('/v1/workers'),
    refetchInterval: 5000,
  });

  return (
    <>
      <h1>Overview</h1>
      <section aria-labelledby="by-status">
        <h2 id="by-status">Tasks by status</h2>
        {counts.isPending ? (
          <Loading what="task counts" />
        ) : counts.isError ? (
          counts.error instanceof ApiError && counts.error.status === 403 ? (
            <Empty>
              Counts span every tenant: a key of one tenant sees its own tasks on the{' '}
              <Link href="/tasks">Tasks</Link> page.
            </Empty>
          ) : (
            <ErrorState error={counts.error} what="task counts" />
          )
        ) : counts.data.length === 0 ? (
          <Empty>
            No tasks yet. <Link href="/tasks/new">Create one</Link>.
          </Empty>
        ) : (
          <CountTables counts={counts.data} />
        )}
      </section>
      <section aria-labelledby="workers-health">
        <h2 id="workers-health">Workers</h2>
        {workers.isPending ? (
          <Loading what="workers" />
        ) : workers.isError ? (
          <ErrorState error={workers.error} what="workers" />
        ) : (
          <WorkerSummary workers={workers.data} />
        )}
      </section>
    </>
  );
}

function CountTables({ counts }: { counts: TaskCount[] }) {
  const byStatus = new Map<string, number>();
  const types = [...new Set(counts.map((c) => c.task_type))].sort();
  const cell = new Map<string, number>();
  for (const c of counts) {
    byStatus.set(c.status, (byStatus.get(c.status) ?? 0) + c.count);
    cell.set(`${c.task_type}\u0000${c.status}`, c.count);
  }
  const statuses = STATUSES.filter((s) => byStatus.has(s));
  return (
    <>
      <ul className="tiles">
        {statuses.map((s) => (
          <li key={s}>
            <Link href={`/tasks?status=${s}`}>
              <StatusBadge status={s} /> <strong>{byStatus.get(s)}</strong>
              <span className="visually-hidden"> tasks</span>
            </Link>
          </li>
        ))}
      </ul>
      <p>
        <Link href="/tasks?outcome=FAIL">Tasks that failed</Link> ·{' '}
        <Link href="/tasks?outcome=CANCELLED">Tasks that were cancelled</Link>
      </p>
      <h2 id="by-type">Tasks by type and status</h2>
      <div className="scroll" tabIndex={0} role="region" aria-labelledby="by-type">
        <table className="dense">
          <thead>
            <tr>
              <th scope="col">Type</th>
              {statuses.map((s) => (
                <th scope="col" key={s} className="num">
                  {s}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {types.map((t) => (
              <tr key={t}>
                <th scope="row">
                  <Link href={`/tasks?task_type=${encodeURIComponent(t)}`}>{t}</Link>
                </th>
                {statuses.map((s) => {
                  const n = cell.get(`${t}\u0000${s}`);
                  return (
                    <td key={s} className="num">
                      {n ? (
                        <Link
                          href={`/tasks?task_type=${encodeURIComponent(t)}&status=${s}`}
                          aria-label={`${n} ${t} tasks in ${s}`}
                        >
                          {n}
                        </Link>
                      ) : (
                        <span className="muted">0</span>
                      )}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function WorkerSummary({ workers }: { workers: Worker[] }) {
  if (workers.length === 0) return <Empty>No worker is registered.</Empty>;
  const unwell = workers.filter((w) => w.health !== 'healthy' || w.draining);
  return (
    <p>
      {workers.length} registered, {workers.length - unwell.length} healthy and taking tasks
      {unwell.length > 0 ? (
        <>
          ; <strong>{unwell.length} not</strong>:{' '}
          {unwell.map((w, i) => (
            <span key={w.worker_id}>
              {i > 0 ? ', ' : ''}
              {w.worker_id} ({w.draining ? 'draining' : w.health})
            </span>
          ))}
        </>
      ) : null}
      . <Link href="/workers">All workers</Link>
    </p>
  );
}
