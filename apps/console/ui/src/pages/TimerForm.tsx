import { useQuery } from '@tanstack/react-query';
import { FormEvent, useEffect, useState } from 'react';
import { ApiError, api } from '../api';
import { Field, TextArea, Time } from '../components';
import { TimerPreview } from '../ops-types';
import { Timer, TaskType } from '../types';
import { keys } from '../query-keys';

type Kind = 'cron' | 'interval' | 'once';

/** The browser's zone: where a person reading the console most likely means a cron to run. */
const BROWSER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/** A `datetime-local` value (the browser's zone) for an ISO instant, and back. */
const toLocalInput = (iso: string | null | undefined): string => {
  if (!iso) return '';
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
};
const fromLocalInput = (v: string): string | undefined =>
  v ? new Date(v).toISOString() : undefined;

/** `value`, once it has stayed the same for `ms`: a preview follows typing without a call per key. */
function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}

interface Draft {
  name: string;
  kind: Kind;
  cron: string;
  zone: string;
  everySeconds: string;
  at: string;
  taskType: string;
  taskName: string;
  params: string;
}

function draftOf(t: Timer | null): Draft {
  const s = t?.schedule;
  return {
    name: t?.name ?? '',
    kind: (s?.kind as Kind) ?? 'cron',
    cron: s?.cron ?? '0 */15 * * * *',
    zone: s?.time_zone ?? BROWSER_ZONE,
    everySeconds: s?.every_ms ? String(s.every_ms / 1000) : '600',
    at: toLocalInput(s?.at),
    taskType: t?.task?.create_info.task_type ?? '',
    taskName: t?.task?.create_info.task_name ?? '',
    params: JSON.stringify(t?.task?.params ?? {}, null, 2),
  };
}

/**
 * The body of POST /v1/timers for a draft, or why it cannot be one yet. A changed timer keeps
 * what the form does not show of its task (priority, labels, process_arg...).
 */
function bodyOf(
  d: Draft,
  base: Timer | null,
): { body?: Record<string, unknown>; problem?: string } {
  let params: unknown;
  try {
    params = JSON.parse(d.params || '{}');
  } catch (err) {
    return { problem: `Params: ${(err as Error).message}` };
  }
  const schedule =
    d.kind === 'cron'
      ? { kind: 'cron', cron: d.cron, time_zone: d.zone || undefined }
      : d.kind === 'interval'
        ? {
            kind: 'interval',
            every_ms: Math.round(Number(d.everySeconds) * 1000),
            at: fromLocalInput(d.at),
          }
        : { kind: 'once', at: fromLocalInput(d.at) };
  return {
    body: {
      name: d.name || 'preview',
      schedule,
      task: {
        ...base?.task,
        create_info: {
          ...base?.task?.create_info,
          task_type: d.taskType,
          task_name: d.taskName || d.name || 'timer task',
        },
        params,
      },
    },
  };
}

/**
 * Create a timer, or change one that starts a task: name, schedule (cron in a zone, interval,
 * once) and the task. As the schedule is typed, the scheduler computes the next five fires with
 * its own schedule code (POST /v1/timers/preview) and says what is wrong, as a create would.
 */
export function TimerForm({
  timer,
  types,
  onDone,
  onCancel,
}: {
  timer: Timer | null;
  types: TaskType[];
  onDone: (text: string) => void;
  onCancel: () => void;
}) {
  const [d, setD] = useState<Draft>(() => draftOf(timer));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const set = (k: keyof Draft) => (e: { target: { value: string } }) =>
    setD({ ...d, [k]: e.target.value });
  const built = bodyOf(d, timer);
  const settled = useSettled(JSON.stringify(built.body ?? null), 400);
  const preview = useQuery({
    queryKey: keys.timerPreview(settled),
    queryFn: () =>
      api<TimerPreview>('/v1/timers/preview', { method: 'POST', body: JSON.parse(settled) }),
    enabled: settled !== 'null' && d.taskType !== '',
    retry: false,
    staleTime: 30_000,
  });

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setError(null);
    if (!built.body) return setError(built.problem ?? 'incomplete');
    setBusy(true);
    try {
      const body = { ...built.body, name: d.name };
      if (timer) {
        await api(`/v1/timers/${encodeURIComponent(timer.timer_id)}`, { method: 'PATCH', body });
        onDone(`${d.name}: changed.`);
      } else {
        await api('/v1/timers', { method: 'POST', body });
        onDone(`${d.name}: created.`);
      }
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };

  const heading = timer ? `Change ${timer.name}` : 'New timer';
  return (
    <section className="panel" aria-labelledby="timer-form">
      <h2 id="timer-form">{heading}</h2>
      <form className="stack" onSubmit={(e) => void submit(e)}>
        <Field label="Name">
          {(id) => <input id={id} required maxLength={200} value={d.name} onChange={set('name')} />}
        </Field>
        <Field label="Schedule">
          {(id) => (
            <select id={id} value={d.kind} onChange={set('kind')}>
              <option value="cron">cron (seconds first, or the classic 5 fields)</option>
              <option value="interval">every so many seconds</option>
              <option value="once">once, at a time</option>
            </select>
          )}
        </Field>
        {d.kind === 'cron' ? (
          <div className="row">
            <Field label="Cron expression">
              {(id) => (
                <input id={id} required spellCheck={false} value={d.cron} onChange={set('cron')} />
              )}
            </Field>
            <Field label="Time zone">
              {(id) => <input id={id} spellCheck={false} value={d.zone} onChange={set('zone')} />}
            </Field>
          </div>
        ) : null}
        {d.kind === 'interval' ? (
          <div className="row">
            <Field label="Every (seconds)">
              {(id) => (
                <input
                  id={id}
                  type="number"
                  min={0.1}
                  step="any"
                  value={d.everySeconds}
                  onChange={set('everySeconds')}
                />
              )}
            </Field>
            <Field label="First fire (optional, your time)">
              {(id) => (
                <input id={id} type="datetime-local" step={1} value={d.at} onChange={set('at')} />
              )}
            </Field>
          </div>
        ) : null}
        {d.kind === 'once' ? (
          <Field label="At (your time)">
            {(id) => (
              <input
                id={id}
                type="datetime-local"
                step={1}
                required
                value={d.at}
                onChange={set('at')}
              />
            )}
          </Field>
        ) : null}
        <div className="preview" aria-live="polite" aria-busy={preview.isFetching}>
          <h3>Next fires</h3>
          {d.taskType === '' ? (
            <p className="muted">Choose the task type to see when it fires.</p>
          ) : !built.body ? (
            <p className="error">{built.problem}</p>
          ) : preview.isPending ? (
            <p className="muted">Asking the scheduler…</p>
          ) : preview.isError ? (
            <p className="error" data-testid="preview-error">
              {preview.error instanceof ApiError ? preview.error.message : String(preview.error)}
            </p>
          ) : preview.data.next_fires.length === 0 ? (
            <p className="muted">It would not fire.</p>
          ) : (
            <ol className="fires" aria-label="Next fires">
              {preview.data.next_fires.map((f) => (
                <li key={f}>
                  <Time iso={f} />
                </li>
              ))}
            </ol>
          )}
        </div>
        <Field label="Task type">
          {(id) => (
            <select id={id} required value={d.taskType} onChange={set('taskType')}>
              <option value="" disabled>
                choose a type
              </option>
              {types.map((t) => (
                <option key={t.task_type} value={t.task_type}>
                  {t.task_type}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Task name">
          {(id) => <input id={id} maxLength={200} value={d.taskName} onChange={set('taskName')} />}
        </Field>
        <TextArea
          label="Task params (JSON)"
          rows={4}
          value={d.params}
          onChange={(params) => setD({ ...d, params })}
        />
        {error ? (
          <p className="error" role="alert">
            {error}
          </p>
        ) : null}
        <div className="row">
          <button type="submit" className="primary" disabled={busy}>
            {timer ? 'Save timer' : 'Create timer'}
          </button>
          <button type="button" onClick={onCancel}>
            Close
          </button>
        </div>
      </form>
    </section>
  );
}
