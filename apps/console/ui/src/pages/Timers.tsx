import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api';
import { ConfirmDialog, Empty, ErrorState, Loading, Time, useTitle } from '../components';
import { Link } from '../router';
import { Topology } from '../topology/model';
import { TaskType, Timer } from '../types';
import { TimerFires } from './TimerFires';
import { TimerForm } from './TimerForm';
import { keys } from '../query-keys';

/** What one fire of the timer starts, in a few words. */
const startsOf = (t: Timer): string =>
  t.task
    ? `a ${t.task.create_info.task_type} task`
    : t.topology
      ? `a run of topology ${t.topology.name}`
      : 'nothing';

/** What "run now" will do, as the confirmation says it. */
function runNowText(t: Timer): string {
  const now = `Starts ${startsOf(t)} now, outside the schedule; the next fires stay as they are.`;
  if (t.overlap_policy === 'skip')
    return `${now} Its overlap policy is skip: if its last fire is still running, nothing starts.`;
  if (t.overlap_policy === 'cancel_previous')
    return `${now} Its overlap policy is cancel_previous: if its last fire is still running, that one is cancelled.`;
  return `${now} It starts even if its last fire is still running (overlap policy allow).`;
}

/** How a timer fires, in a few words. */
function scheduleOf(t: Timer): string {
  const s = t.schedule;
  if (s.kind === 'cron') return `cron ${s.cron ?? '?'} (${s.time_zone ?? 'UTC'})`;
  if (s.kind === 'interval') return `every ${((s.every_ms ?? 0) / 1000).toLocaleString()} s`;
  return `once at ${s.at ? new Date(s.at).toLocaleString() : '?'}`;
}

/**
 * Timers: what each starts, its next five fires and its last, enable or disable it, run it now,
 * see its past fires; create one or change one, with a preview of its fires as it is typed.
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
  /** The timer whose "run now" waits for a yes, and the one whose past fires are shown. */
  const [confirming, setConfirming] = useState<Timer | null>(null);
  const [showing, setShowing] = useState<string | null>(null);
  const types = useQuery({
    queryKey: keys.taskTypes(),
    queryFn: () => api<TaskType[]>('/v1/task-types'),
    staleTime: 60_000,
    enabled: editing !== null,
  });
  const topologies = useQuery({
    queryKey: keys.topologies(),
    queryFn: () => api<Topology[]>('/v1/topologies'),
    staleTime: 60_000,
    enabled: editing !== null,
  });
  const done = async (text: string): Promise<void> => {
    setEditing(null);
    setNote({ ok: true, text });
    await client.invalidateQueries({ queryKey: keys.timers() });
  };

  const runNow = async (t: Timer): Promise<void> => {
    setConfirming(null);
    try {
      const fired = await api<{ task_id?: string; run_id?: string }>(
        `/v1/timers/${encodeURIComponent(t.timer_id)}/run`,
        { method: 'POST', headers: { 'Idempotency-Key': `console-${crypto.randomUUID()}` } },
      );
      setNote({
        ok: true,
        text: `${t.name}: fired now (${fired.run_id ? `run ${fired.run_id}` : `task ${fired.task_id ?? '?'}`}).`,
      });
      setShowing(t.timer_id);
    } catch (err) {
      setNote({ ok: false, text: `${t.name}: ${(err as Error).message}` });
    }
    await client.invalidateQueries({ queryKey: keys.timers() });
    await client.invalidateQueries({ queryKey: ['timer-fires', t.timer_id] });
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
        types.isPending || topologies.isPending ? (
          <Loading what="task types and topologies" />
        ) : types.isError || topologies.isError ? (
          <ErrorState error={types.error ?? topologies.error} what="task types and topologies" />
        ) : (
          <TimerForm
            key={editing === 'new' ? 'new' : editing.timer_id}
            timer={editing === 'new' ? null : editing}
            types={types.data}
            topologies={topologies.data}
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
                    {t.overlap_policy !== 'allow' ? (
                      <div className="muted">overlap: {t.overlap_policy}</div>
                    ) : null}
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
                        {t.topology ? (
                          <Link href={`/topology-runs/${encodeURIComponent(t.last_task_id)}`}>
                            its last run
                          </Link>
                        ) : (
                          <Link href={`/tasks/${encodeURIComponent(t.last_task_id)}`}>
                            its last task
                          </Link>
                        )}
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
                      <button type="button" onClick={() => setEditing(t)}>
                        Change<span className="visually-hidden"> {t.name}</span>
                      </button>
                      <button type="button" onClick={() => setConfirming(t)}>
                        Run now<span className="visually-hidden"> {t.name}</span>
                      </button>
                      <button
                        type="button"
                        aria-expanded={showing === t.timer_id}
                        onClick={() => setShowing(showing === t.timer_id ? null : t.timer_id)}
                      >
                        Past fires<span className="visually-hidden"> of {t.name}</span>
                      </button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {showing && timers.data?.find((t) => t.timer_id === showing) ? (
        <TimerFires timer={timers.data.find((t) => t.timer_id === showing) as Timer} />
      ) : null}
      {confirming ? (
        <ConfirmDialog
          title={`Run ${confirming.name} now?`}
          confirmLabel="Run now"
          onConfirm={() => void runNow(confirming)}
          onClose={() => setConfirming(null)}
        >
          <p>{runNowText(confirming)}</p>
        </ConfirmDialog>
      ) : null}
    </>
  );
}
