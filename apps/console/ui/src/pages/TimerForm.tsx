import { useQuery } from '@tanstack/react-query';
import { FormEvent, useEffect, useState } from 'react';
import { ApiError, api } from '../api';
import { Field, Time, objectOf, WholeNumberField } from '../components';
import { TimerPreview } from '../ops-types';
import { Timer, TaskType } from '../types';
import { keys } from '../query-keys';
import { Topology } from '../topology/model';
import { listOf, parseLabels, problemsByParam } from './ParamsFields';
import { StartsDraft, TimerStarts, paramsOf, startsDraftOf } from './TimerStarts';

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
  overlap: string;
  misfire: string;
  graceMs: string;
  s: StartsDraft;
}

function draftOf(t: Timer | null, types: TaskType[]): Draft {
  const s = t?.schedule;
  return {
    name: t?.name ?? '',
    kind: (s?.kind as Kind) ?? 'cron',
    cron: s?.cron ?? '0 */15 * * * *',
    zone: s?.time_zone ?? BROWSER_ZONE,
    everySeconds: s?.every_ms ? String(s.every_ms / 1000) : '600',
    at: toLocalInput(s?.at),
    overlap: t?.overlap_policy ?? 'allow',
    misfire: t?.misfire_policy ?? 'fire_once',
    graceMs: String(t?.misfire_grace_ms ?? 5000),
    s: startsDraftOf(t, types),
  };
}

/** What the form's fires start, as the body has it: a task or a topology run. */
function startsOf(
  d: StartsDraft,
  base: Timer | null,
  types: TaskType[],
  timerName: string,
): Record<string, unknown> {
  const labels = parseLabels(d.labels);
  const labelled = Object.keys(labels).length ? { labels } : {};
  if (d.starts === 'topology') {
    // What the form does not show of the run (its deadline) is kept.
    const { version: _v, labels: _l, input: _i, name: _n, ...keep } = base?.topology ?? {};
    return {
      topology: {
        ...keep,
        name: d.topology,
        input: objectOf('Run input', d.input),
        ...(d.topologyVersion.trim() ? { version: Number(d.topologyVersion) } : {}),
        ...labelled,
      },
    };
  }
  // A changed timer keeps what the form does not show of its task (process_arg, max_retry...).
  const {
    labels: _l,
    lock_keys: _k,
    params: _p,
    ...keep
  } = base?.task ?? {
    create_info: { task_type: '', task_name: '' },
  };
  const lockKeys = listOf(d.lockKeys);
  const { deadline_second: _d, ...processArg } = keep.process_arg ?? {};
  const deadline = d.deadline.trim() ? { deadline_second: Number(d.deadline) } : {};
  const arg = { ...processArg, ...deadline };
  return {
    task: {
      ...keep,
      create_info: {
        ...keep.create_info,
        task_type: d.taskType,
        task_name: d.taskName || timerName || 'timer task',
        // Blank: the priority it had (or the API's default), not 0.
        ...(d.priority.trim() ? { important_level: Number(d.priority) } : {}),
      },
      params: paramsOf(d, types),
      ...labelled,
      ...(lockKeys.length ? { lock_keys: lockKeys } : {}),
      ...(Object.keys(arg).length ? { process_arg: arg } : { process_arg: undefined }),
    },
  };
}

/** The schedule a draft says, as the API takes it. */
function scheduleOf(d: Draft): Record<string, unknown> {
  return d.kind === 'cron'
    ? { kind: 'cron', cron: d.cron, time_zone: d.zone || undefined }
    : d.kind === 'interval'
      ? {
          kind: 'interval',
          every_ms: Math.round(Number(d.everySeconds) * 1000),
          at: fromLocalInput(d.at),
        }
      : { kind: 'once', at: fromLocalInput(d.at) };
}

/** The body of POST /v1/timers for a draft, or why it cannot be one yet. */
function bodyOf(
  d: Draft,
  base: Timer | null,
  types: TaskType[],
): { body?: Record<string, unknown>; problem?: string } {
  let starts: Record<string, unknown>;
  try {
    starts = startsOf(d.s, base, types, d.name);
  } catch (err) {
    return { problem: (err as Error).message };
  }
  const schedule = scheduleOf(d);
  return {
    body: {
      name: d.name || 'preview',
      schedule,
      overlap_policy: d.overlap,
      misfire_policy: d.misfire,
      ...(d.graceMs.trim() ? { misfire_grace_ms: Math.round(Number(d.graceMs)) } : {}),
      ...starts,
    },
  };
}

/** What each overlap and misfire policy does, in the words the form offers. */
const OVERLAP = {
  allow: 'fire anyway',
  skip: 'skip the fire while the last one runs',
  cancel_previous: 'cancel the last one and fire',
};
const MISFIRE = {
  fire_once: 'one fire for all the slots missed',
  fire_all: 'a fire for each slot missed',
  skip: 'no fire for missed slots',
};

/**
 * Create or change a timer: name, schedule (cron in a zone, interval, once), what each fire starts
 * (a task with its params as fields from the type's schema, or a topology run), and its overlap
 * and misfire policies. As it is typed, the scheduler computes the next five fires with its own
 * schedule code (POST /v1/timers/preview) and says what is wrong, as a create would.
 */
export function TimerForm({
  timer,
  types,
  topologies,
  onDone,
  onCancel,
}: {
  timer: Timer | null;
  types: TaskType[];
  topologies: Topology[];
  onDone: (text: string) => void;
  onCancel: () => void;
}) {
  const [d, setD] = useState<Draft>(() => draftOf(timer, types));
  /**
   * The schedule as the form first showed it: a change that leaves it alone does not send it (a
   * schedule sent restarts the timer from its next slot, which would drop missed slots).
   */
  const [shownSchedule] = useState(() => JSON.stringify(scheduleOf(draftOf(timer, types))));
  const [error, setError] = useState<string | null>(null);
  const [problems, setProblems] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const put = (k: Exclude<keyof Draft, 's'>) => (value: string) => setD({ ...d, [k]: value });
  const set = (k: Exclude<keyof Draft, 's'>) => (e: { target: { value: string } }) =>
    put(k)(e.target.value);
  const built = bodyOf(d, timer, types);
  const chosen = d.s.starts === 'task' ? d.s.taskType !== '' : d.s.topology !== '';
  const settled = useSettled(JSON.stringify(built.body ?? null), 400);
  const preview = useQuery({
    queryKey: keys.timerPreview(settled),
    queryFn: () =>
      api<TimerPreview>('/v1/timers/preview', { method: 'POST', body: JSON.parse(settled) }),
    enabled: settled !== 'null' && chosen,
    retry: false,
    staleTime: 30_000,
  });

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setError(null);
    setProblems({});
    if (!built.body) return setError(built.problem ?? 'incomplete');
    setBusy(true);
    try {
      const body: Record<string, unknown> = { ...built.body, name: d.name };
      if (timer) {
        if (JSON.stringify(body.schedule) === shownSchedule) delete body.schedule;
        await api(`/v1/timers/${encodeURIComponent(timer.timer_id)}`, { method: 'PATCH', body });
        onDone(`${d.name}: changed.`);
      } else {
        await api('/v1/timers', { method: 'POST', body });
        onDone(`${d.name}: created.`);
      }
    } catch (err) {
      // A param the type's schema refuses is shown under its field.
      if (err instanceof ApiError && d.s.starts === 'task' && !d.s.asJson) {
        const errors = (err.data as { errors?: { pointer?: string }[] } | null)?.errors;
        const { byParam, rest } = problemsByParam({
          errors: (errors ?? []).map((x) => ({ ...x, pointer: x.pointer?.replace(/^\/task/, '') })),
        });
        setProblems(byParam);
        setError(
          Object.keys(byParam).length && !rest.length
            ? 'The params are not what this type takes: see the fields above.'
            : err.message,
        );
      } else setError((err as Error).message);
      setBusy(false);
    }
  };

  const heading = timer ? `Change ${timer.name}` : 'New timer';
  return (
    <section className="panel" aria-labelledby="timer-form">
      <h2 id="timer-form">{heading}</h2>
      <form className="stack" noValidate onSubmit={(e) => void submit(e)}>
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
          {!chosen ? (
            <p className="muted">Choose what it starts to see when it fires.</p>
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
        <TimerStarts
          d={d.s}
          set={(s) => {
            setD({ ...d, s });
            setProblems({});
          }}
          types={types}
          topologies={topologies}
          problems={problems}
          onError={setError}
        />
        <div className="row">
          <Field label="When the last fire still runs">
            {(id) => (
              <select id={id} value={d.overlap} onChange={set('overlap')}>
                {Object.entries(OVERLAP).map(([v, text]) => (
                  <option key={v} value={v}>
                    {text} ({v})
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="After slots were missed (downtime)">
            {(id) => (
              <select id={id} value={d.misfire} onChange={set('misfire')}>
                {Object.entries(MISFIRE).map(([v, text]) => (
                  <option key={v} value={v}>
                    {text} ({v})
                  </option>
                ))}
              </select>
            )}
          </Field>
          <WholeNumberField
            label="A slot is missed when reached later than (ms)"
            min={0}
            value={d.graceMs}
            onChange={put('graceMs')}
          />
        </div>
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
