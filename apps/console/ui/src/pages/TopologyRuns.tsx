import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, queryString } from '../api';
import {
  Duration,
  Empty,
  ErrorState,
  Field,
  Loading,
  StatusBadge,
  Time,
  useTitle,
} from '../components';
import { Link, navigate, useLocation, withQuery } from '../router';
import { RunPage, Topology } from '../topology/model';
import { keys } from '../query-keys';

const PAGE_SIZE = 50;
/** The statuses a run's centre task goes through. */
const RUN_STATUSES = ['INIT', 'CREATE', 'RUNNING', 'PAUSE', 'SUCCESS', 'FAIL', 'FINISH'] as const;
const OUTCOMES = ['SUCCESS', 'FAIL', 'ROLLBACK', 'CANCELLED'] as const;

/** Topology runs, newest first: filters in the URL, cursor pages, refreshed while open. */
export function TopologyRuns() {
  useTitle('Topology runs');
  const loc = useLocation();
  const name = loc.query.get('name') ?? '';
  const status = loc.query.get('status') ?? '';
  const outcome = loc.query.get('outcome') ?? '';
  const cursor = loc.query.get('cursor') ?? '';

  const defs = useQuery({
    queryKey: keys.topologies(),
    queryFn: () => api<Topology[]>('/v1/topologies'),
    staleTime: 60_000,
  });
  const page = useQuery({
    queryKey: keys.topologyRuns(name, status, outcome, cursor),
    queryFn: () =>
      api<RunPage>(
        `/v1/topology-runs${queryString({ name, status, outcome, cursor, limit: PAGE_SIZE })}`,
      ),
    refetchInterval: 3000,
    placeholderData: keepPreviousData,
  });
  const setFilter = (changes: Record<string, string | undefined>): void =>
    navigate(withQuery(loc, { ...changes, cursor: undefined }));
  const filtered = Boolean(name || status || outcome);

  return (
    <>
      <div className="title-row">
        <h1>Topology runs</h1>
        <Link className="button" href="/topologies">
          Definitions
        </Link>
      </div>
      <form
        className="filters"
        role="search"
        aria-label="Filter runs"
        onSubmit={(e) => e.preventDefault()}
      >
        <Field label="Definition">
          {(id) => (
            <select id={id} value={name} onChange={(e) => setFilter({ name: e.target.value })}>
              <option value="">any</option>
              {(defs.data ?? []).map((t) => (
                <option key={t.name} value={t.name}>
                  {t.name}
                </option>
              ))}
              {name && !defs.data?.some((t) => t.name === name) ? (
                <option value={name}>{name}</option>
              ) : null}
            </select>
          )}
        </Field>
        <Field label="Status">
          {(id) => (
            <select id={id} value={status} onChange={(e) => setFilter({ status: e.target.value })}>
              <option value="">any</option>
              {RUN_STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Outcome">
          {(id) => (
            <select
              id={id}
              value={outcome}
              onChange={(e) => setFilter({ outcome: e.target.value })}
            >
              <option value="">any</option>
              {OUTCOMES.map((o) => (
                <option key={o} value={o}>
                  {o}
                </option>
              ))}
            </select>
          )}
        </Field>
        {filtered ? (
          <Link href="/topology-runs" className="button">
            Clear filters
          </Link>
        ) : null}
      </form>

      {page.isPending ? (
        <Loading what="runs" />
      ) : page.isError ? (
        <ErrorState error={page.error} what="runs" />
      ) : page.data.items.length === 0 ? (
        <Empty>
          {filtered || cursor ? (
            <>
              No runs match these filters. <Link href="/topology-runs">Show all runs</Link>
            </>
          ) : (
            <>
              No runs yet. Start one from a <Link href="/topologies">definition</Link>.
            </>
          )}
        </Empty>
      ) : (
        <div
          className="scroll"
          tabIndex={0}
          role="region"
          aria-label="Run list"
          aria-busy={page.isPlaceholderData}
        >
          <table className="dense">
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Definition</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col">Took</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {page.data.items.map((r) => (
                <tr key={r.run_id}>
                  <td>
                    <Link href={`/topology-runs/${encodeURIComponent(r.run_id)}`}>
                      <code>{r.run_id}</code>
                    </Link>
                  </td>
                  <td>
                    <Link href={`/topologies/${encodeURIComponent(r.name)}?version=${r.version}`}>
                      {r.name} v{r.version}
                    </Link>
                  </td>
                  <td>
                    <StatusBadge status={r.status} outcome={r.outcome} />
                  </td>
                  <td>
                    <Time iso={r.created_at} />
                  </td>
                  <td>
                    <Duration from={r.started_at} to={r.finished_at} />
                  </td>
                  <td className="wrap">{r.error ?? <span className="muted">—</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <nav className="pager" aria-label="Pages">
        {cursor ? <Link href={withQuery(loc, { cursor: undefined })}>Newest</Link> : null}
        {page.data?.next_cursor ? (
          <Link href={withQuery(loc, { cursor: page.data.next_cursor })}>Older runs</Link>
        ) : null}
      </nav>
    </>
  );
}
