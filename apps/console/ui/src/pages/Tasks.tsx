import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useTaskChanges } from '../live';
import { useEffect, useRef, useState } from 'react';
import { ACTION_EFFECTS, ACTION_LABELS, TaskAction, bulkRetryCall, whyNot } from '../actions';
import { ApiError, api, queryString } from '../api';
import {
  ConfirmDialog,
  Empty,
  ErrorState,
  Loading,
  Progress,
  StatusBadge,
  Time,
  useTitle,
} from '../components';
import { Link, useLocation, withQuery } from '../router';
import { Task, TaskPage, TaskType, progressOf } from '../types';
import { TaskFilters, apiFilters, paramsOf, typedOnly, useSettled } from './TaskFilters';
import { keys } from '../query-keys';

const PAGE_SIZE = 50;
const BULK: readonly TaskAction[] = ['cancel', 'retry', 'pause', 'continue'];

/** The call a bulk action makes for one task, or null when the task is left alone. */
function callFor(task: Task, action: TaskAction): string | null {
  if (action === 'retry') return bulkRetryCall(task);
  return whyNot(task, action) === null ? action : null;
}

/** Runs `work` over `items`, `limit` at a time. */
async function eachLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]);
  });
  await Promise.all(lanes);
}

/** The task list: filters in the URL, cursor pages, live refresh, bulk actions on a selection. */
export function Tasks() {
  useTitle('Tasks');
  const loc = useLocation();
  const p = paramsOf(loc);
  const cursor = loc.query.get('cursor') ?? '';
  // Typing in a text filter asks the server once the text has stayed the same a moment; a
  // choice from a list asks at once.
  const filterKey = useSettled(JSON.stringify(apiFilters(p)), typedOnly(p));
  const filters = JSON.parse(filterKey) as Record<string, string | undefined>;
  const client = useQueryClient();

  const types = useQuery({
    queryKey: keys.taskTypes(),
    queryFn: () => api<TaskType[]>('/v1/task-types'),
    staleTime: 60_000,
  });
  const live = useRef(false);
  const page = useQuery({
    queryKey: keys.tasks(filterKey, cursor),
    queryFn: () =>
      api<TaskPage>(`/v1/tasks${queryString({ ...filters, cursor, limit: PAGE_SIZE })}`),
    // With the live stream, the rows shown are read again when one of them moves, and the
    // list now and then for new tasks; without it, every 3 s.
    refetchInterval: () => (live.current ? 10_000 : 3000),
    placeholderData: keepPreviousData,
  });
  live.current = useTaskChanges(
    { taskIds: page.data?.items.map((t) => t.task_id) ?? [] },
    () => void page.refetch(),
  );

  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [asking, setAsking] = useState<TaskAction | null>(null);
  const [report, setReport] = useState<{ text: string; failures: string[] } | null>(null);
  const [running, setRunning] = useState(false);
  const headerBox = useRef<HTMLInputElement>(null);

  // A new filter or page starts with nothing selected.
  useEffect(() => setSelected(new Set()), [filterKey, cursor]);

  const items = page.data?.items ?? [];
  // A cursor goes on from the order and filters it was read under. While the rows shown are the
  // last answer's (a new order or filter still loading, or typed text not yet asked for), a next
  // page built from it would pair the address's new order with the old one's cursor.
  const current = !page.isPlaceholderData && filterKey === JSON.stringify(apiFilters(p));
  const filtered = Object.values(filters).some(Boolean);
  const newestFirst = (p.sort || 'created') === 'created' && (p.order || 'desc') === 'desc';
  const chosen = items.filter((t) => selected.has(t.task_id));
  const allChosen = items.length > 0 && chosen.length === items.length;
  useEffect(() => {
    if (headerBox.current)
      headerBox.current.indeterminate = chosen.length > 0 && chosen.length < items.length;
  });

  const toggle = (id: string): void =>
    setSelected((s) => {
      const next = new Set(s);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  const run = async (action: TaskAction): Promise<void> => {
    const targets = chosen.flatMap((t) => {
      const call = callFor(t, action);
      return call ? [{ task: t, call }] : [];
    });
    setAsking(null);
    setRunning(true);
    const failures: string[] = [];
    await eachLimited(targets, 4, async ({ task, call }) => {
      try {
        await api(`/v1/tasks/${encodeURIComponent(task.task_id)}/${call}`, {
          method: 'POST',
          body: {},
        });
      } catch (err) {
        failures.push(
          `${task.task_name} (${task.task_id}): ${err instanceof ApiError ? err.message : String(err)}`,
        );
      }
    });
    setRunning(false);
    setSelected(new Set());
    const done = targets.length - failures.length;
    setReport({
      text: `${ACTION_LABELS[action]}: ${done} of ${targets.length} task${targets.length === 1 ? '' : 's'} done${failures.length ? `, ${failures.length} refused` : ''}.`,
      failures,
    });
    await client.invalidateQueries({ queryKey: keys.tasks() });
    await client.invalidateQueries({ queryKey: keys.overview.counts() });
  };

  const askingTargets = asking ? chosen.filter((t) => callFor(t, asking) !== null) : [];

  return (
    <>
      <div className="title-row">
        <h1>Tasks</h1>
        <Link className="button primary" href="/tasks/new">
          New task
        </Link>
      </div>
      <TaskFilters loc={loc} p={p} types={types.data} />

      <div className="bulk" role="group" aria-label="Act on the selected tasks">
        <span aria-live="polite">{chosen.length} selected</span>
        {BULK.map((a) => {
          const n = chosen.filter((t) => callFor(t, a) !== null).length;
          return (
            <button
              key={a}
              type="button"
              aria-disabled={n === 0 || running}
              title={
                n === 0
                  ? chosen.length === 0
                    ? 'select tasks first'
                    : `none of the selected tasks can be: ${ACTION_EFFECTS[a]}`
                  : undefined
              }
              onClick={() => {
                if (n > 0 && !running) setAsking(a);
              }}
            >
              {ACTION_LABELS[a]}
              {n > 0 ? ` (${n})` : ''}
            </button>
          );
        })}
      </div>
      {running ? <Loading what="the answers" /> : null}
      {report ? (
        <div className={`report ${report.failures.length ? 'error' : ''}`} role="status">
          <p>{report.text}</p>
          {report.failures.length ? (
            <ul>
              {report.failures.map((f) => (
                <li key={f}>{f}</li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}

      {page.isPending ? (
        <Loading what="tasks" />
      ) : page.isError ? (
        <ErrorState error={page.error} what="tasks" />
      ) : items.length === 0 ? (
        <Empty>
          {!cursor && !filtered ? (
            <>
              No tasks yet. <Link href="/tasks/new">Create one</Link>.
            </>
          ) : (
            <>
              No tasks match these filters. <Link href="/tasks">Show all tasks</Link>
            </>
          )}
        </Empty>
      ) : (
        <div
          className="scroll"
          tabIndex={0}
          role="region"
          aria-label="Task list"
          aria-busy={page.isPlaceholderData}
        >
          <table className="dense">
            <thead>
              <tr>
                <th scope="col" className="check">
                  <input
                    ref={headerBox}
                    type="checkbox"
                    aria-label={`Select all ${items.length} tasks shown`}
                    checked={allChosen}
                    onChange={() =>
                      setSelected(allChosen ? new Set() : new Set(items.map((t) => t.task_id)))
                    }
                  />
                </th>
                <th scope="col">Task</th>
                <th scope="col">Type</th>
                <th scope="col">Status</th>
                <th scope="col">Progress</th>
                <th scope="col" className="num">
                  Attempt
                </th>
                <th scope="col">Created</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {items.map((t) => (
                <tr key={t.task_id} className={selected.has(t.task_id) ? 'selected' : undefined}>
                  <td className="check">
                    <input
                      type="checkbox"
                      aria-label={`Select ${t.task_name} (${t.task_id})`}
                      checked={selected.has(t.task_id)}
                      onChange={() => toggle(t.task_id)}
                    />
                  </td>
                  <td>
                    <Link href={`/tasks/${t.task_id}`}>{t.task_name}</Link>
                    <div className="id">{t.task_id}</div>
                  </td>
                  <td>{t.task_type}</td>
                  <td>
                    <StatusBadge status={t.task_status} outcome={t.outcome} />
                  </td>
                  <td>
                    {progressOf(t) ? (
                      <Progress
                        percent={progressOf(t)?.percent ?? 0}
                        label={`Progress of ${t.task_name}`}
                      />
                    ) : (
                      <span className="muted">—</span>
                    )}
                  </td>
                  <td className="num">{t.attempt}</td>
                  <td>
                    <Time iso={t.created_at} />
                  </td>
                  <td>
                    <Time iso={t.updated_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <nav className="pager" aria-label="Pages">
        {cursor ? (
          <Link href={withQuery(loc, { cursor: undefined })}>
            {newestFirst ? 'Newest' : 'First page'}
          </Link>
        ) : null}
        {current && page.data?.next_cursor ? (
          <Link href={withQuery(loc, { cursor: page.data.next_cursor })}>
            {newestFirst ? 'Older tasks' : 'Next page'}
          </Link>
        ) : null}
      </nav>

      {asking ? (
        <ConfirmDialog
          title={`${ACTION_LABELS[asking]} ${askingTargets.length} task${askingTargets.length === 1 ? '' : 's'}?`}
          confirmLabel={`${ACTION_LABELS[asking]} ${askingTargets.length}`}
          onConfirm={() => void run(asking)}
          onClose={() => setAsking(null)}
        >
          <p>
            {askingTargets.length} task{askingTargets.length === 1 ? '' : 's'} will be{' '}
            {ACTION_EFFECTS[asking]}.
          </p>
          {chosen.length > askingTargets.length ? (
            <p>
              {chosen.length - askingTargets.length} of the {chosen.length} selected cannot be, in
              their status, and are left as they are.
            </p>
          ) : null}
        </ConfirmDialog>
      ) : null}
    </>
  );
}
