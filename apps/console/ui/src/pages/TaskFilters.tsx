import { useEffect, useState } from 'react';
import { Field } from '../components';
import { Link, Location, navigate, withQuery } from '../router';
import { STATUSES, TaskType } from '../types';

/** Outcomes of decided tasks (CANCELLED: stopped because someone asked, not a failure). */
const OUTCOMES = ['SUCCESS', 'FAIL', 'ROLLBACK', 'CANCELLED'] as const;

/** The list's orders: `sort` and `order` of `GET /v1/tasks`, as one choice. */
const ORDERS = [
  ['created.desc', 'Newest first'],
  ['created.asc', 'Oldest first'],
  ['updated.desc', 'Last changed first'],
  ['updated.asc', 'Longest unchanged first'],
  ['priority.desc', 'Highest priority first'],
  ['priority.asc', 'Lowest priority first'],
] as const;

/** Filters kept in the address, each the API's own parameter (`q` is the search box). */
const KEYS = [
  'task_type',
  'status',
  'outcome',
  'q',
  'name_prefix',
  'sort',
  'order',
  'parent_task_id',
  'control_task_id',
  'worker',
  'attempts_min',
  'tenant',
  'label',
  'created_from',
  'created_to',
] as const;
export type TaskListParams = Record<(typeof KEYS)[number], string>;

export function paramsOf(loc: Location): TaskListParams {
  return Object.fromEntries(KEYS.map((k) => [k, loc.query.get(k) ?? ''])) as TaskListParams;
}

/**
 * Whether the search box's text can be looked for: a word of 3 or more letters or digits (the
 * name index holds no shorter ones), or a task id.
 */
export const searchable = (text: string): boolean => /[\p{L}\p{N}_]{3,}/u.test(text);

/** The API's query for these filters: `q` goes to `search` once it holds something to find. */
export function apiFilters(p: TaskListParams): Record<string, string | undefined> {
  const { q, ...rest } = p;
  return { ...rest, search: searchable(q.trim()) ? q.trim() : undefined };
}

/** What the text filters hold: only a change of these waits for the typing to stop. */
export const typedOnly = (p: TaskListParams): string =>
  JSON.stringify([
    p.q,
    p.name_prefix,
    p.parent_task_id,
    p.control_task_id,
    p.worker,
    p.attempts_min,
    p.tenant,
    p.label,
  ]);

/**
 * `value`, held back while `typed` keeps changing: a new `value` with the same `typed` (a choice
 * from a list) comes at once, one with new `typed` once it has stayed 300 ms (typing does not
 * send a request a key).
 */
export function useSettled(value: string, typed: string): string {
  const [settled, setSettled] = useState({ value, typed });
  const wait = typed !== settled.typed;
  useEffect(() => {
    if (!wait) return;
    const t = setTimeout(() => setSettled({ value, typed }), 300);
    return () => clearTimeout(t);
  }, [value, typed, wait]);
  return wait ? settled.value : value;
}

/** A text filter: its value goes to the address as it is typed (replacing, not adding, history). */
function TextFilter(props: {
  label: string;
  name: keyof TaskListParams;
  p: TaskListParams;
  set: (changes: Record<string, string | undefined>, replace?: boolean) => void;
  placeholder?: string;
  type?: string;
  hint?: string;
}) {
  return (
    <Field label={props.label}>
      {(id) => (
        <>
          <input
            id={id}
            type={props.type ?? 'text'}
            value={props.p[props.name]}
            placeholder={props.placeholder}
            min={props.type === 'number' ? 1 : undefined}
            aria-describedby={props.hint ? `${id}-hint` : undefined}
            onChange={(e) => props.set({ [props.name]: e.target.value }, true)}
          />
          {props.hint ? (
            <small id={`${id}-hint`} className="muted">
              {props.hint}
            </small>
          ) : null}
        </>
      )}
    </Field>
  );
}

/** `2026-11-26T07:30` in the browser's zone, as a datetime-local input shows an instant. */
function localInput(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/**
 * A time filter: picked in the browser's zone, kept in the address as the UTC instant the API
 * takes (shown on hover).
 */
function TimeFilter(props: {
  label: string;
  name: 'created_from' | 'created_to';
  p: TaskListParams;
  set: (changes: Record<string, string | undefined>, replace?: boolean) => void;
}) {
  const iso = props.p[props.name];
  return (
    <Field label={props.label}>
      {(id) => (
        <input
          id={id}
          type="datetime-local"
          value={iso ? localInput(iso) : ''}
          title={iso ? `${iso} (UTC)` : undefined}
          onChange={(e) => {
            const at = e.target.value ? new Date(e.target.value) : undefined;
            props.set({
              [props.name]: at && !Number.isNaN(at.getTime()) ? at.toISOString() : undefined,
            });
          }}
        />
      )}
    </Field>
  );
}

/** The task list's filters and order, all in the address. */
export function TaskFilters({
  loc,
  p,
  types,
}: {
  loc: Location;
  p: TaskListParams;
  types: TaskType[] | undefined;
}) {
  const set = (changes: Record<string, string | undefined>, replace = false): void =>
    navigate(withQuery(loc, { ...changes, cursor: undefined }), { replace });
  const order = `${p.sort || 'created'}.${p.order || 'desc'}`;
  const more = Boolean(
    p.parent_task_id ||
    p.control_task_id ||
    p.worker ||
    p.attempts_min ||
    p.tenant ||
    p.label ||
    p.created_from ||
    p.created_to,
  );
  const any = KEYS.some((k) => p[k]);
  const q = p.q.trim();
  return (
    <form
      className="filters"
      role="search"
      aria-label="Filter tasks"
      onSubmit={(e) => e.preventDefault()}
    >
      <Field label="Type">
        {(id) => (
          <select id={id} value={p.task_type} onChange={(e) => set({ task_type: e.target.value })}>
            <option value="">any</option>
            {(types ?? []).map((t) => (
              <option key={t.task_type} value={t.task_type}>
                {t.task_type}
              </option>
            ))}
            {p.task_type && !types?.some((t) => t.task_type === p.task_type) ? (
              <option value={p.task_type}>{p.task_type}</option>
            ) : null}
          </select>
        )}
      </Field>
      <Field label="Status">
        {(id) => (
          <select id={id} value={p.status} onChange={(e) => set({ status: e.target.value })}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Outcome">
        {(id) => (
          <select id={id} value={p.outcome} onChange={(e) => set({ outcome: e.target.value })}>
            <option value="">any</option>
            {OUTCOMES.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        )}
      </Field>
      <TextFilter
        label="Name words or id"
        name="q"
        type="search"
        p={p}
        set={set}
        placeholder="all tasks"
        hint={q && !searchable(q) ? 'type a word of 3 or more letters' : undefined}
      />
      <TextFilter label="Name starts with" name="name_prefix" p={p} set={set} />
      <Field label="Order">
        {(id) => (
          <select
            id={id}
            value={order}
            onChange={(e) => {
              const [sort, dir] = e.target.value.split('.');
              set({
                sort: sort === 'created' ? undefined : sort,
                order: dir === 'desc' ? undefined : dir,
              });
            }}
          >
            {ORDERS.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        )}
      </Field>
      <details className="more-filters" open={more}>
        <summary>More filters</summary>
        <TextFilter label="Parent task id" name="parent_task_id" p={p} set={set} />
        <TextFilter label="Control task id" name="control_task_id" p={p} set={set} />
        <TextFilter label="Worker" name="worker" p={p} set={set} placeholder="worker id" />
        <TextFilter label="Attempts at least" name="attempts_min" type="number" p={p} set={set} />
        <TextFilter label="Tenant" name="tenant" p={p} set={set} />
        <TextFilter label="Label" name="label" p={p} set={set} placeholder="key:value" />
        <TimeFilter label="Created from" name="created_from" p={p} set={set} />
        <TimeFilter label="Created before" name="created_to" p={p} set={set} />
      </details>
      {any ? (
        <Link href="/tasks" className="button">
          Clear filters
        </Link>
      ) : null}
    </form>
  );
}
