import { useQuery } from '@tanstack/react-query';
import { api } from '../api';
import { Empty, ErrorState, Loading, StatusBadge, Time } from '../components';
import { keys } from '../query-keys';
import { Link } from '../router';
import { RunPage } from '../topology/model';
import { TaskPage, Timer } from '../types';

/** Fires shown at most (the newest). */
const SHOWN = 20;

/** A past fire: when, by whom (the schedule or a person), and what it made. */
interface Fire {
  id: string;
  href: string;
  fireTime: string | undefined;
  manual: boolean;
  status: string;
  outcome: string | null;
}

/**
 * A timer's past fires, newest first, with the task (or topology run) each made: what its fires
 * are labelled with (`timer_id`), read back from the task or run lists.
 */
export function TimerFires({ timer }: { timer: Timer }) {
  const label = `timer_id:${timer.timer_id}`;
  const runs = timer.topology !== null;
  const fires = useQuery({
    queryKey: keys.timerFires(timer.timer_id, runs),
    queryFn: async (): Promise<Fire[]> => {
      const q = `?label=${encodeURIComponent(label)}&limit=${SHOWN}`;
      if (runs)
        return (await api<RunPage>(`/v1/topology-runs${q}`)).items.map((r) => ({
          id: r.run_id,
          href: `/topology-runs/${encodeURIComponent(r.run_id)}`,
          fireTime: r.labels.fire_time,
          manual: r.labels.manual_fire === 'true',
          status: r.status,
          outcome: r.outcome ?? null,
        }));
      return (await api<TaskPage>(`/v1/tasks${q}`)).items.map((t) => ({
        id: t.task_id,
        href: `/tasks/${encodeURIComponent(t.task_id)}`,
        fireTime: t.labels.fire_time,
        manual: t.labels.manual_fire === 'true',
        status: t.task_status,
        outcome: t.outcome ?? null,
      }));
    },
    refetchInterval: 5000,
  });
  const what = runs ? 'run' : 'task';
  return (
    <section className="panel" aria-labelledby={`fires-${timer.timer_id}`}>
      <h2 id={`fires-${timer.timer_id}`}>Past fires of {timer.name}</h2>
      {fires.isPending ? (
        <Loading what="fires" />
      ) : fires.isError ? (
        <ErrorState error={fires.error} what="fires" />
      ) : fires.data.length === 0 ? (
        <Empty>It has not fired yet.</Empty>
      ) : (
        <div
          className="scroll"
          tabIndex={0}
          role="region"
          aria-label={`Past fires of ${timer.name}`}
        >
          <table className="dense">
            <thead>
              <tr>
                <th scope="col">Fired</th>
                <th scope="col">By</th>
                <th scope="col">Its {what}</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {fires.data.map((f) => (
                <tr key={f.id}>
                  <td>
                    <Time iso={f.fireTime} />
                  </td>
                  <td>{f.manual ? 'run now' : 'the schedule'}</td>
                  <td>
                    <Link href={f.href}>
                      <code>{f.id}</code>
                    </Link>
                  </td>
                  <td>
                    <StatusBadge status={f.status} outcome={f.outcome} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {fires.data && fires.data.length === SHOWN ? (
        <p className="muted">
          The newest {SHOWN}.{' '}
          <Link
            href={
              runs
                ? `/topology-runs?name=${encodeURIComponent(timer.topology?.name ?? '')}`
                : `/tasks?label=${encodeURIComponent(label)}`
            }
          >
            All of its {what}s
          </Link>
        </p>
      ) : null}
    </section>
  );
}
