import { useQuery } from '@tanstack/react-query';
import { useEffect } from 'react';
import { api } from '../api';
import { Empty, ErrorState, Loading, Time } from '../components';
import { Link } from '../router';
import { TaskLock } from '../types';
import { keys } from '../query-keys';

/**
 * Who holds each lock key of a task, as the lock backend answers now: read again each time the
 * task is (`refreshedAt`), and every 5 s while a key is held by another holder (it passes on
 * without this task changing) or still by this task once it has finished (the release follows
 * the final write).
 */
export function TaskLocks({
  id,
  refreshedAt,
  finished,
}: {
  id: string;
  refreshedAt: number;
  finished: boolean;
}) {
  const locks = useQuery({
    queryKey: keys.taskLocks(id),
    queryFn: () => api<TaskLock[]>(`/v1/tasks/${encodeURIComponent(id)}/locks`),
    refetchInterval: (q) =>
      q.state.data?.some((l) => l.held && (!l.held_by_this_task || finished)) ? 5000 : false,
  });
  const { refetch } = locks;
  useEffect(() => {
    // Joins a read in flight (the first one, on opening) instead of starting another.
    void refetch({ cancelRefetch: false });
  }, [refreshedAt, refetch]);

  return (
    <section aria-labelledby="locks-h">
      <h2 id="locks-h">Locks</h2>
      {locks.isPending ? (
        <Loading what="locks" />
      ) : locks.isError ? (
        <ErrorState error={locks.error} what="who holds the lock keys" />
      ) : locks.data.length === 0 ? (
        <Empty>This task has no lock keys.</Empty>
      ) : (
        <div className="scroll" tabIndex={0} role="region" aria-labelledby="locks-h">
          <table className="dense">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Holder</th>
                <th scope="col" className="num">
                  Fence
                </th>
                <th scope="col">Lease ends</th>
              </tr>
            </thead>
            <tbody>
              {locks.data.map((l) => (
                <tr key={l.key}>
                  <td className="id">{l.key}</td>
                  <td>
                    <Holder lock={l} />
                  </td>
                  <td className="num">{l.fence ?? <span className="muted">—</span>}</td>
                  <td>
                    {l.expires_at ? (
                      <Time iso={l.expires_at} />
                    ) : l.held ? (
                      <span className="muted">not kept by the lock backend</span>
                    ) : (
                      <span className="muted">—</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** This task, a link to the task that holds the key, or the holder as the API names it. */
function Holder({ lock }: { lock: TaskLock }) {
  if (!lock.held) return <span className="muted">free</span>;
  const id = lock.holder_task_id;
  if (!id) return <>{lock.holder}</>;
  // `task <id> on scheduler <instance>`: the id is shown (or linked) once.
  const prefix = `task ${id} `;
  const where = lock.holder?.startsWith(prefix) ? lock.holder.slice(prefix.length) : lock.holder;
  return (
    <>
      {lock.held_by_this_task ? (
        <strong>this task</strong>
      ) : (
        <Link href={`/tasks/${encodeURIComponent(id)}`}>task {id}</Link>
      )}{' '}
      <span className="muted">{where}</span>
    </>
  );
}
