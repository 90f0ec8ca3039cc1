import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api';
import { Empty, ErrorState, Loading, Time, useTitle } from '../components';
import { Link } from '../router';
import { Timer } from '../types';

/** How a timer fires, in a few words. */
function scheduleOf(t: Timer): string {
  const s = t.schedule;
  if (s.kind === 'cron') return `cron ${s.cron ?? '?'} (${s.time_zone ?? 'UTC'})`;
  if (s.kind === 'interval') return `every ${((s.every_ms ?? 0) / 1000).toLocaleString()} s`;
  return `once at ${s.at ? new Date(s.at).toLocaleString() : '?'}`;
}

/** Timers: what each starts, when it fires next and fired last, and enable or disable it. */
export function Timers() {
  useTitle('Timers');
  const client = useQueryClient();
  const timers = useQuery({
    queryKey: ['timers'],
    queryFn: () => api<Timer[]>('/v1/timers'),
    refetchInterval: 5000,
  });
  const [note, setNote] = useState<{ ok: boolean; text: string } | null>(null);

  const setEnabled = async (t: Timer, enabled: boolean): Promise<void> => {
    try {
      await api(`/v1/timers/${encodeURIComponent(t.timer_id)}`, {
        method: 'PATCH',
        body: { enabled },
      });
      setNote({ ok: true, text: `${t.name}: ${enabled ? 'enabled' : 'disabled'}.` });
    } catch (err) {
      setNote({ ok: false, text: `${t.name}: ${(err as Error).message}` });
    }
    await client.invalidateQueries({ queryKey: ['timers'] });
  };

  return (
    <>
      <h1>Timers</h1>
      {note ? (
        <p role="status" className={note.ok ? undefined : 'error'}>
          {note.text}
        </p>
      ) : null}
      {timers.isPending ? (
        <Loading what="timers" />
      ) : timers.isError ? (
        <ErrorState error={timers.error} what="timers" />
      ) : timers.data.length === 0 ? (
        <Empty>
          No timers. A timer starts a task (or a topology run) on a cron, an interval or once:{' '}
          <code>POST /v1/timers</code>.
        </Empty>
      ) : (
        <div className="scroll" tabIndex={0} role="region" aria-label="Timer list">
          <table className="dense">
            <thead>
              <tr>
                <th scope="col">Timer</th>
                <th scope="col">Starts</th>
                <th scope="col">Schedule</th>
                <th scope="col">Next fire</th>
                <th scope="col">Last fire</th>
                <th scope="col" className="num">
                  Fired, missed, skipped
                </th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {timers.data.map((t) => (
                <tr key={t.timer_id}>
                  <td>
                    {t.name}
                    <div className="id">{t.timer_id}</div>
                  </td>
                  <td>
                    {t.task
                      ? t.task.create_info.task_type
                      : t.topology
                        ? `topology ${t.topology.name}`
                        : '—'}
                  </td>
                  <td>{scheduleOf(t)}</td>
                  <td>
                    <Time iso={t.next_fire_at} />
                  </td>
                  <td>
                    <Time iso={t.last_fire_at} />
                    {t.last_task_id ? (
                      <div>
                        <Link href={`/tasks/${t.last_task_id}`}>its task</Link>
                      </div>
                    ) : null}
                  </td>
                  <td className="num">
                    {t.fire_count}, {t.misfire_count}, {t.skip_count}
                  </td>
                  <td>
                    <div className="row">
                      <span className={`badge ${t.enabled ? 'status-success' : 'status-pause'}`}>
                        {t.enabled ? 'enabled' : 'disabled'}
                      </span>
                      <button type="button" onClick={() => void setEnabled(t, !t.enabled)}>
                        {t.enabled ? 'Disable' : 'Enable'}
                        <span className="visually-hidden"> {t.name}</span>
                      </button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
