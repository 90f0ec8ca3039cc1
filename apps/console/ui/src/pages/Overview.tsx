import { useQuery } from '@tanstack/react-query';
import { ReactNode } from 'react';
import { ApiError, api } from '../api';
import { Empty, ErrorState, Field, Loading, StatusBadge, useTitle } from '../components';
import { Backlog, TaskHistory } from '../ops-types';
import { Link, navigate, useLocation, withQuery } from '../router';
import { STATUSES, TaskCount, TaskPage, Worker } from '../types';
import { BacklogTable, RecentFailures, WorkerSummary } from './OverviewParts';
import { Throughput } from './Throughput';
import { keys } from '../query-keys';

/** What a key of one tenant is told where the numbers span every tenant. */
const ALL_TENANTS = (
  <Empty>
    These numbers span every tenant: a key of one tenant sees its own tasks on the{' '}
    <Link href="/tasks">Tasks</Link> page.
  </Empty>
);

/** A query's states: loading, refused to a tenant's key, failed, or its content. */
function Section<T>({
  q,
  what,
  children,
}: {
  q: { isPending: boolean; isError: boolean; error: unknown; data?: T };
  what: string;
  children: (data: T) => ReactNode;
}) {
  if (q.isPending) return <Loading what={what} />;
  if (q.isError)
    return q.error instanceof ApiError && q.error.status === 403 ? (
      ALL_TENANTS
    ) : (
      <ErrorState error={q.error} what={what} />
    );
  return <>{children(q.data as T)}</>;
}

/**
 * "Is anything wrong?": tasks by status and type, finished per minute over the last hour, the
 * backlog, the workers that are not healthy and the last failures. Five calls, polled.
 */
export function Overview() {
  useTitle('Overview');
  const loc = useLocation();
  const chartType = loc.query.get('type') ?? '';
  const history = useQuery({
    queryKey: keys.overview.history(60),
    queryFn: () => api<TaskHistory>('/v1/task-counts/history?minutes=60'),
    refetchInterval: 10_000,
  });
  const backlog = useQuery({
    queryKey: keys.overview.backlog(),
    queryFn: () => api<Backlog[]>('/v1/task-counts/backlog'),
    refetchInterval: 5000,
  });
  const failures = useQuery({
    queryKey: keys.overview.recentFailures(),
    // The newest failures first by when they failed (their last change), not by when they were
    // made: an old task that failed a minute ago is a recent failure, as the chart counts it.
    queryFn: () => api<TaskPage>('/v1/tasks?status=FINISH&outcome=FAIL&sort=updated&limit=10'),
    refetchInterval: 10_000,
  });
  const counts = useQuery({
    queryKey: keys.overview.counts(),
    queryFn: () => api<TaskCount[]>('/v1/task-counts'),
    refetchInterval: 5000,
  });
  const workers = useQuery({
    queryKey: keys.workers(),
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
      <section aria-labelledby="throughput">
        <div className="title-row">
          <h2 id="throughput">Finished in the last hour</h2>
          {history.data ? (
            <Field label="Task type">
              {(id) => (
                <select
                  id={id}
                  value={chartType}
                  onChange={(e) =>
                    navigate(withQuery(loc, { type: e.target.value }), { replace: true })
                  }
                >
                  <option value="">all types</option>
                  {[...new Set(history.data.buckets.map((b) => b.task_type)), chartType]
                    .filter((t, i, a) => t && a.indexOf(t) === i)
                    .sort()
                    .map((t) => (
                      <option key={t} value={t}>
                        {t}
                      </option>
                    ))}
                </select>
              )}
            </Field>
          ) : null}
        </div>
        <Section q={history} what="the last hour">
          {(h) => <Throughput history={h} taskType={chartType} />}
        </Section>
      </section>
      <section aria-labelledby="backlog">
        <h2 id="backlog">Waiting to start</h2>
        <Section q={backlog} what="the backlog">
          {(rows) => <BacklogTable rows={rows} />}
        </Section>
      </section>
      <section aria-labelledby="workers-health">
        <h2 id="workers-health">Workers</h2>
        <Section q={workers} what="workers">
          {(list) => <WorkerSummary workers={list} />}
        </Section>
      </section>
      <section aria-labelledby="recent-failures">
        <h2 id="recent-failures">Recent failures</h2>
        {history.data ? (
          <p data-testid="failed-last-hour">
            {failedIn(history.data)} {failedIn(history.data) === 1 ? 'task' : 'tasks'} failed in the
            last hour, as the chart counts them; the newest failures first:
          </p>
        ) : null}
        <Section q={failures} what="recent failures">
          {(page) => <RecentFailures tasks={page.items} />}
        </Section>
        <p>
          <Link href="/tasks?outcome=FAIL">Every failed task</Link>
        </p>
      </section>
    </>
  );
}

/** How many tasks finished failed in the history's minutes, every type. */
const failedIn = (h: TaskHistory): number =>
  h.buckets.filter((b) => b.outcome === 'FAIL').reduce((n, b) => n + b.count, 0);

/** A column of the counts: a status, or FINISH with one outcome. */
interface Column {
  key: string;
  status: string;
  outcome: string | null;
  /** Its heading, and what a screen reader hears for one count. */
  label: string;
  /** The task list it links to (with `&task_type=` added per type). */
  query: string;
}

const OUTCOME_ORDER = ['SUCCESS', 'FAIL', 'ROLLBACK', 'CANCELLED'];

/** The columns of `counts`: statuses in their order, FINISH split by outcome where it is. */
function columnsOf(counts: TaskCount[]): Column[] {
  const out: Column[] = [];
  for (const status of STATUSES) {
    const here = counts.filter((c) => c.status === status);
    if (here.length === 0) continue;
    if (status !== 'FINISH') {
      out.push({ key: status, status, outcome: null, label: status, query: `status=${status}` });
      continue;
    }
    const outcomes = [...new Set(here.map((c) => c.outcome ?? null))].sort(
      (a, b) => OUTCOME_ORDER.indexOf(a ?? '') - OUTCOME_ORDER.indexOf(b ?? ''),
    );
    for (const outcome of outcomes)
      out.push({
        key: `FINISH:${outcome ?? ''}`,
        status,
        outcome,
        label: outcome ? `FINISH · ${outcome}` : 'FINISH',
        query: outcome ? `status=FINISH&outcome=${outcome}` : 'status=FINISH',
      });
  }
  return out;
}

function CountTables({ counts }: { counts: TaskCount[] }) {
  const types = [...new Set(counts.map((c) => c.task_type))].sort();
  const keyOf = (c: TaskCount): string =>
    c.status === 'FINISH' ? `FINISH:${c.outcome ?? ''}` : c.status;
  const total = new Map<string, number>();
  const cell = new Map<string, number>();
  for (const c of counts) {
    total.set(keyOf(c), (total.get(keyOf(c)) ?? 0) + c.count);
    cell.set(`${c.task_type}\u0000${keyOf(c)}`, c.count);
  }
  const columns = columnsOf(counts);
  return (
    <>
      <ul className="tiles">
        {columns.map((col) => (
          <li key={col.key}>
            <Link href={`/tasks?${col.query}`}>
              <StatusBadge status={col.status} />
              {col.outcome ? <> · {col.outcome}</> : null} <strong>{total.get(col.key)}</strong>
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
              {columns.map((col) => (
                <th scope="col" key={col.key} className="num">
                  {col.label}
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
                {columns.map((col) => {
                  const n = cell.get(`${t}\u0000${col.key}`);
                  return (
                    <td key={col.key} className="num">
                      {n ? (
                        <Link
                          href={`/tasks?task_type=${encodeURIComponent(t)}&${col.query}`}
                          aria-label={`${n} ${t} tasks in ${col.label}`}
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
