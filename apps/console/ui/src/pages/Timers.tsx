import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api';
import { Empty, ErrorState, Loading, Time, useTitle } from '../components';
import { Link } from '../router';
import { TaskType, Timer } from '../types';
import { TimerForm } from './TimerForm';
import { keys } from '../query-keys';

/** How a timer fires, in a few words. */
function scheduleOf(t: Timer): string {
  const s = t.schedule;
  if (s.kind === 'cron') return `cron ${s.cron ?? '?'} (${s.time_zone ?? 'UTC'})`;
  if (s.kind === 'interval') return `every ${((s.every_ms ?? 0) / 1000).toLocaleString()} s`;
  return `once at ${s.at ? new Date(s.at).toLocaleString() : '?'}`;
}

/**
 * Timers: what each starts, its next five fires and its last, enable or disable it; create one,
 * or change one that starts a task, with a preview of its fires as the schedule is typed.
 */
export function Timers() {
  useTitle('Timers');
  const client = useQueryClient();
  const timers = useQuery({
    queryKey: keys.timers(),
    queryFn: () => api<Timer[]>('/v1/timers'),
    refetchInterval: 5000,
  });
  const [note, setNote] = useState<{ ok: boolean; text: string } | null>(null);
  /** The form: closed, a new timer, or one being changed. */
  const [editing, setEditing] = useState<Timer | 'new' | null>(null);
  const types = useQuery({
    queryKey: keys.taskTypes(),
    queryFn: () => api<TaskType[]>('/v1/task-types'),
    staleTime: 60_000,
    enabled: editing !== null,
  });
  const done = async (text: string): Promise<void> => {
    setEditing(null);
    setNote({ ok: true, text });
    await client.invalidateQueries({ queryKey: keys.timers() });
  };

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
    await client.invalidateQueries({ queryKey: keys.timers() });
  };

  return (
    <>
      <div className="title-row">
        <h1>Timers</h1>
        {editing === null ? (
          <button type="button" className="primary" onClick={() => setEditing('new')}>
            New timer
          </button>
        ) : null}
      </div>
      {editing !== null ? (
        types.isPending ? (
          <Loading what="task types" />
        ) : types.isError ? (
          <ErrorState error={types.error} what="task types" />
        ) : (
          <TimerForm
            key={editing === 'new' ? 'new' : editing.timer_id}
            timer={editing === 'new' ? null : editing}
            types={types.data}
            onDone={(text) => void done(text)}
            onCancel={() => setEditing(null)}
          />
        )
      ) : null}
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
          No timers. A timer starts a task (or a topology run) on a cron, an interval or once: make
          one with <strong>New timer</strong>.
        </Empty>
      ) : (
        <div className="scroll" tabIndex={0} role="region" aria-label="Timer list">
          <table className="dense">
            <thead>
              <tr>
                <th scope="col">Timer</th>
                <th scope="col">Starts</th>
                <th scope="col">Schedule</th>
                <th scope="col">Next fires</th>
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
                    {t.next_fires.length ? (
                      <ol className="fires" aria-label={`Next fires of ${t.name}`}>
                        {t.next_fires.map((f) => (
                          <li key={f}>
                            <Time iso={f} />
                          </li>
                        ))}
                      </ol>
                    ) : (
                      <span className="muted">{t.enabled ? 'no more' : 'none while disabled'}</span>
                    )}
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
                      {t.task ? (
                        <button type="button" onClick={() => setEditing(t)}>
                          Change<span className="visually-hidden"> {t.name}</span>
                        </button>
                      ) : null}
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
