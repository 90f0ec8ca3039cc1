import { Duration, Empty, StatusBadge, Time } from '../components';
import { Link } from '../router';
import { Backlog } from '../ops-types';
import { Task, Worker } from '../types';

/** Due tasks waiting for an attempt, by type and priority, with how long the oldest has waited. */
export function BacklogTable({ rows }: { rows: Backlog[] }) {
  if (rows.length === 0) return <Empty>Nothing waits: every task that is due has started.</Empty>;
  return (
    <div className="scroll" tabIndex={0} role="region" aria-labelledby="backlog">
      <table className="dense">
        <thead>
          <tr>
            <th scope="col">Type</th>
            <th scope="col" className="num">
              Priority
            </th>
            <th scope="col" className="num">
              Waiting
            </th>
            <th scope="col">Oldest waits</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={`${r.task_type}:${r.priority}`}>
              <th scope="row">
                <Link href={`/tasks?task_type=${encodeURIComponent(r.task_type)}`}>
                  {r.task_type}
                </Link>
              </th>
              <td className="num">{r.priority}</td>
              <td className="num">{r.count}</td>
              <td>
                <Duration from={r.oldest_due_at} /> <span className="muted">since</span>{' '}
                <Time iso={r.oldest_due_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The last failed tasks, newest first, each linking to its page. */
export function RecentFailures({ tasks }: { tasks: Task[] }) {
  if (tasks.length === 0) return <Empty>No task has failed.</Empty>;
  return (
    <ul className="failures">
      {tasks.map((t) => (
        <li key={t.task_id}>
          <Link href={`/tasks/${t.task_id}`}>{t.task_name}</Link>{' '}
          <span className="muted">{t.task_type}</span>{' '}
          <StatusBadge status={t.task_status} outcome={t.outcome} />{' '}
          <Time iso={t.finished_at ?? t.updated_at} />
          {typeof t.error?.message === 'string' ? (
            <div className="muted clip">{t.error.message}</div>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

/** Why a worker takes no new tasks, in a few words. */
function unwellBecause(w: Worker): string {
  if (w.blacklist) return `blacklisted: ${w.blacklist.reason}`;
  if (w.draining) return 'draining';
  return w.health;
}

/** How many workers there are, and each one that is not taking tasks, with why. */
export function WorkerSummary({ workers }: { workers: Worker[] }) {
  if (workers.length === 0) return <Empty>No worker is registered.</Empty>;
  const unwell = workers.filter((w) => w.health !== 'healthy' || w.draining || w.blacklist);
  return (
    <>
      <p>
        {workers.length} registered, {workers.length - unwell.length} healthy and taking tasks
        {unwell.length > 0 ? (
          <>
            ; <strong>{unwell.length} not</strong>
          </>
        ) : null}
        . <Link href="/workers">All workers</Link>
      </p>
      {unwell.length > 0 ? (
        <ul aria-label="Workers not taking tasks">
          {unwell.map((w) => (
            <li key={w.worker_id}>
              <strong>{w.worker_id}</strong>{' '}
              <span className={`badge health-${w.health}`}>{w.health}</span> {unwellBecause(w)};
              last heartbeat <Time iso={w.last_heartbeat_at} />
            </li>
          ))}
        </ul>
      ) : null}
    </>
  );
}
