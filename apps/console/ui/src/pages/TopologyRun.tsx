import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef } from 'react';
import { ApiError, api } from '../api';
import { useTaskChanges } from '../live';
import {
  Duration,
  Empty,
  ErrorState,
  JsonBlock,
  Loading,
  Progress,
  StatusBadge,
  Time,
  useTitle,
} from '../components';
import { Link } from '../router';
import { DagGraph, StatusLegend } from '../topology/Graph';
import {
  Run,
  RunHistory,
  RunNode,
  approvalAsk,
  Topology,
  isFinished,
  kindLabel,
  nodePercent,
  statusClass,
  statusLabel,
} from '../topology/model';
import { useRunControls } from '../topology/RunControls';
import { RunTimeline } from '../topology/Timeline';
import { keys } from '../query-keys';

/** Where a node's name leads: its task, or the child run of a sub-topology node. */
const nodeHref = (n: RunNode): string | null =>
  n.task_id
    ? n.kind === 'topology'
      ? `/topology-runs/${encodeURIComponent(n.task_id)}`
      : `/tasks/${encodeURIComponent(n.task_id)}`
    : null;

function NodeDetail({ n }: { n: RunNode }) {
  const pct = nodePercent(n);
  const items = n.items ? `${n.items.SUCCESS ?? 0} of ${n.items.total} items` : null;
  return (
    <>
      {n.attempt ? <span>attempt {n.attempt}</span> : null}
      {items ? <span> · {items}</span> : null}
      {pct !== null && n.status === 'ACTIVE' ? (
        <div>
          <Progress percent={pct} label={`Progress of node ${n.key}`} />
        </div>
      ) : null}
    </>
  );
}

/** One run: its graph coloured by status, live while it moves; its controls and its nodes. */
export function TopologyRun({ id }: { id: string }) {
  useTitle(`Topology run ${id}`);
  const client = useQueryClient();
  // One call draws the page: the run with every node's status, task, progress and result.
  // Every second while a node runs (its progress is not in the stream of changes); else the
  // live stream of the run's tasks brings each change, and polling covers a stream that is down.
  const live = useRef(false);
  const run = useQuery({
    queryKey: keys.topologyRun(id),
    queryFn: () => api<Run>(`/v1/topology-runs/${encodeURIComponent(id)}`),
    refetchInterval: (q) => {
      const r = q.state.data;
      if (r && isFinished(r)) return live.current ? 30_000 : 10_000;
      if (live.current && r && !(r.nodes ?? []).some((n) => n.status === 'ACTIVE')) return 5000;
      return 1000;
    },
  });
  live.current = useTaskChanges({ controlTaskId: id }, () => {
    void client.invalidateQueries({ queryKey: keys.topologyRun(id) });
  });

  const crumbs = (
    <nav aria-label="Breadcrumb" className="crumbs">
      <Link href="/topology-runs">Topology runs</Link> / <span aria-current="page">{id}</span>
    </nav>
  );
  if (run.isPending) return <Loading what={`run ${id}`} />;
  if (run.isError)
    return (
      <>
        {crumbs}
        <h1>Run {id}</h1>
        {run.error instanceof ApiError && run.error.status === 404 ? (
          <Empty>
            No such run (or not one your key may see). <Link href="/topology-runs">All runs</Link>
          </Empty>
        ) : (
          <ErrorState error={run.error} what="the run" />
        )}
      </>
    );
  return (
    <>
      {crumbs}
      <RunView
        run={run.data}
        refresh={() => client.invalidateQueries({ queryKey: keys.topologyRun(id) })}
        stale={run.isRefetchError}
      />
    </>
  );
}

function RunView({
  run,
  refresh,
  stale,
}: {
  run: Run;
  refresh: () => Promise<void>;
  stale: boolean;
}) {
  const controls = useRunControls(run, refresh);
  const nodes = run.nodes ?? [];
  // What each node does (its task type) is in the definition's version, which never changes.
  const def = useQuery({
    queryKey: keys.topology(run.name, run.version),
    queryFn: () =>
      api<Topology>(`/v1/topologies/${encodeURIComponent(run.name)}?version=${run.version}`),
    staleTime: Infinity,
  });
  const kinds = new Map(
    (def.data?.nodes ?? []).map((n) => [n.key, kindLabel(n as Record<string, unknown>)]),
  );
  const kindOf = (n: RunNode): string => kinds.get(n.key) ?? n.kind;
  const live = !isFinished(run);
  // Read again with the run (its key is under the run's), and every few seconds while it moves.
  const history = useQuery({
    queryKey: keys.topologyRunHistory(run.run_id),
    queryFn: () => api<RunHistory>(`/v1/topology-runs/${encodeURIComponent(run.run_id)}/history`),
    refetchInterval: live ? 3000 : false,
  });
  return (
    <>
      <div className="title-row">
        <h1>
          {run.name} <span className="muted">run</span>
        </h1>
        <StatusBadge status={run.status} outcome={run.outcome} />
      </div>
      <p className="muted" aria-live="off">
        {live ? 'Live: read again every second while the run moves.' : 'The run has ended.'}
        {stale ? (
          <span className="error"> The last refresh failed; showing what was read before.</span>
        ) : null}
      </p>

      <dl className="facts">
        <dt>Definition</dt>
        <dd>
          <Link href={`/topologies/${encodeURIComponent(run.name)}?version=${run.version}`}>
            {run.name} version {run.version}
          </Link>
        </dd>
        <dt>Run id</dt>
        <dd className="id">
          <Link href={`/tasks/${encodeURIComponent(run.run_id)}`}>{run.run_id}</Link> (its centre
          task)
        </dd>
        {run.parent_run_id ? (
          <>
            <dt>Parent run</dt>
            <dd>
              <Link href={`/topology-runs/${encodeURIComponent(run.parent_run_id)}`}>
                {run.parent_run_id}
              </Link>
            </dd>
          </>
        ) : null}
        <dt>Tenant</dt>
        <dd>{run.tenant}</dd>
        <dt>Created</dt>
        <dd>
          <Time iso={run.created_at} />
        </dd>
        <dt>Took</dt>
        <dd>
          <Duration from={run.started_at} to={run.finished_at} />
          {live ? ' so far' : ''}
        </dd>
        {run.deadline_at ? (
          <>
            <dt>Deadline</dt>
            <dd>
              <Time iso={run.deadline_at} />
              {run.reason === 'deadline' ? ' (it passed and cut the run short)' : ''}
            </dd>
          </>
        ) : null}
        {run.error ? (
          <>
            <dt>Error</dt>
            <dd className="error">{run.error}</dd>
          </>
        ) : null}
      </dl>

      {nodes.some((n) => approvalAsk(n) !== null) ? (
        <section aria-labelledby="approvals-h" className="callout">
          <h2 id="approvals-h">Waiting for a decision</h2>
          {nodes.map((n) => {
            const ask = approvalAsk(n);
            return ask === null ? null : (
              <div key={n.key} data-approval={n.key}>
                <p>
                  Node <strong>{n.key}</strong> asks: {ask}
                </p>
                {controls.decisionButtons(n)}
              </div>
            );
          })}
        </section>
      ) : null}

      <section aria-labelledby="run-actions-h">
        <h2 id="run-actions-h">Actions</h2>
        {controls.runButtons}
        {controls.noteLine}
      </section>

      <h2 id="graph-h">Graph</h2>
      <StatusLegend />
      <DagGraph
        label={`Graph of run ${run.run_id}`}
        nodes={nodes.map((n) => ({
          key: n.key,
          depends_on: n.depends_on,
          kind: kindOf(n),
          status: n.status,
          href: nodeHref(n),
          detail: <NodeDetail n={n} />,
          problem: n.status === 'FAILED' ? n.error : null,
        }))}
      />

      <h2 id="timeline-h">Timeline</h2>
      {history.isPending ? (
        <Loading what="the run's history" />
      ) : history.isError ? (
        <ErrorState error={history.error} what="the run's history" />
      ) : (
        <RunTimeline entries={history.data.entries} now={history.dataUpdatedAt} />
      )}

      <h2 id="nodes-h">Nodes</h2>
      <div className="scroll" tabIndex={0} role="region" aria-labelledby="nodes-h">
        <table className="dense">
          <thead>
            <tr>
              <th scope="col">Node</th>
              <th scope="col">Status</th>
              <th scope="col">Does</th>
              <th scope="col">Progress</th>
              <th scope="col">Started</th>
              <th scope="col">Took</th>
              <th scope="col">Error</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {nodes.map((n) => {
              const href = nodeHref(n);
              return (
                <tr key={n.key} data-node-row={n.key}>
                  <td>{href ? <Link href={href}>{n.key}</Link> : n.key}</td>
                  <td>
                    <span className={`badge ${statusClass(n.status)}`}>
                      {statusLabel(n.status)}
                    </span>
                    {n.task_status ? <div className="id">task {n.task_status}</div> : null}
                  </td>
                  <td>{kindOf(n)}</td>
                  <td>
                    <NodeDetail n={n} />
                  </td>
                  <td>
                    <Time iso={n.started_at} />
                  </td>
                  <td>
                    <Duration from={n.started_at} to={n.finished_at} />
                  </td>
                  <td className="wrap">{n.error ?? <span className="muted">—</span>}</td>
                  <td>{controls.nodeButtons(n)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <JsonBlock label="Input" value={run.input} />
      {controls.dialog}
    </>
  );
}
