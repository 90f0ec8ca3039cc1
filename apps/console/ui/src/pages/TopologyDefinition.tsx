import { useQuery } from '@tanstack/react-query';
import { FormEvent, useState } from 'react';
import { ApiError, api } from '../api';
import {
  Empty,
  ErrorState,
  Field,
  JsonBlock,
  Loading,
  Time,
  useTitle,
  TextArea,
} from '../components';
import { Link, navigate, useLocation, withQuery } from '../router';
import { DagGraph } from '../topology/Graph';
import { Run, Topology, kindLabel } from '../topology/model';
import { keys } from '../query-keys';

/** One definition: its versions, the graph of the one chosen, and a form to start a run of it. */
export function TopologyDefinition({ name }: { name: string }) {
  useTitle(`Topology ${name}`);
  const loc = useLocation();
  const asked = loc.query.get('version');
  // One call: every version, newest first, each with its nodes.
  const versions = useQuery({
    queryKey: keys.topologyVersions(name),
    queryFn: () => api<Topology[]>(`/v1/topologies/${encodeURIComponent(name)}/versions`),
  });

  const crumbs = (
    <nav aria-label="Breadcrumb" className="crumbs">
      <Link href="/topologies">Topologies</Link> / <span aria-current="page">{name}</span>
    </nav>
  );
  if (versions.isPending) return <Loading what={`topology ${name}`} />;
  if (versions.isError)
    return (
      <>
        {crumbs}
        <h1>{name}</h1>
        {versions.error instanceof ApiError && versions.error.status === 404 ? (
          <Empty>
            No such topology (or not one your key may see).{' '}
            <Link href="/topologies">All topologies</Link>
          </Empty>
        ) : (
          <ErrorState error={versions.error} what="the topology" />
        )}
      </>
    );
  const all = versions.data;
  const t = asked ? all.find((v) => String(v.version) === asked) : all[0];

  return (
    <>
      {crumbs}
      <div className="title-row">
        <h1>{name}</h1>
        <Link className="button" href={`/topology-runs?name=${encodeURIComponent(name)}`}>
          Runs of {name}
        </Link>
      </div>
      <div className="filters version-pick">
        <Field label="Version">
          {(id) => (
            <select
              id={id}
              value={t ? String(t.version) : (asked ?? '')}
              onChange={(e) => navigate(withQuery(loc, { version: e.target.value }))}
            >
              {t ? null : <option value={asked ?? ''}>v{asked} (none)</option>}
              {all.map((v, i) => (
                <option key={v.version} value={String(v.version)}>
                  v{v.version}
                  {i === 0 ? ' (newest)' : ''}, {new Date(v.created_at).toLocaleDateString()}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      {!t ? (
        <Empty>
          {name} has no version {asked}.{' '}
          <Link href={withQuery(loc, { version: undefined })}>The newest</Link>
        </Empty>
      ) : (
        <VersionView t={t} newest={t.version === all[0].version} />
      )}
    </>
  );
}

function VersionView({ t, newest }: { t: Topology; newest: boolean }) {
  return (
    <>
      <dl className="facts">
        <dt>Version</dt>
        <dd>
          {t.version}
          {newest ? ' (newest)' : ''}, saved <Time iso={t.created_at} /> by {t.created_by}
        </dd>
        <dt>Description</dt>
        <dd>{t.description || <span className="muted">none</span>}</dd>
        <dt>On failure</dt>
        <dd>
          {t.rollback_on_failure
            ? 'the nodes that succeeded are rolled back, latest first'
            : 'nothing is rolled back'}
          {t.fail_fast === 'cancel'
            ? '; no node starts after the first failure, and those under way are cancelled'
            : t.fail_fast
              ? '; no node starts after the first failure'
              : ''}
        </dd>
        <dt>Deadline</dt>
        <dd>
          {t.deadline_seconds
            ? `${t.deadline_seconds} s from the start of a run (a run may set its own)`
            : 'none'}
        </dd>
        <dt>Tenant</dt>
        <dd>{t.tenant ?? 'shared: every tenant may run it'}</dd>
      </dl>

      <h2 id="graph-h">Graph</h2>
      <DagGraph
        label={`Graph of ${t.name} version ${t.version}`}
        nodes={t.nodes.map((n) => ({
          key: n.key,
          depends_on: n.depends_on ?? [],
          kind: kindLabel(n as Record<string, unknown>),
          detail:
            n.trigger_rule && n.trigger_rule !== 'all_success'
              ? `when ${n.trigger_rule}`
              : undefined,
        }))}
      />

      <StartRun t={t} />

      <h2>Nodes</h2>
      <div className="scroll" tabIndex={0} role="region" aria-label={`Nodes of ${t.name}`}>
        <table className="dense">
          <thead>
            <tr>
              <th scope="col">Node</th>
              <th scope="col">Does</th>
              <th scope="col">Depends on</th>
              <th scope="col">Starts when</th>
            </tr>
          </thead>
          <tbody>
            {t.nodes.map((n) => (
              <tr key={n.key}>
                <td>{n.key}</td>
                <td>{kindLabel(n as Record<string, unknown>)}</td>
                <td>
                  {n.depends_on?.length ? (
                    n.depends_on.join(', ')
                  ) : (
                    <span className="muted">—</span>
                  )}
                </td>
                <td>{n.on_failure ? 'the run fails' : (n.trigger_rule ?? 'all_success')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <JsonBlock label="Definition (JSON)" value={t} />
    </>
  );
}

/** Starts a run of this version with an input given as JSON; opens the run once started. */
function StartRun({ t }: { t: Topology }) {
  const [input, setInput] = useState('{}');
  // The input paths the nodes' placeholders read, so a person knows what to give.
  const reads = [
    ...new Set(
      [...JSON.stringify(t.nodes).matchAll(/\{\{\s*input\.([\w.-]+)\s*\}\}/g)].map(
        (m) => `input.${m[1]}`,
      ),
    ),
  ];
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    if (busy) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(input || '{}');
    } catch (err) {
      setError(`Input is not JSON: ${(err as Error).message}`);
      return;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      setError('Input must be a JSON object, e.g. {"cluster": "orders"}');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const run = await api<Run>(`/v1/topologies/${encodeURIComponent(t.name)}/runs`, {
        method: 'POST',
        body: { input: parsed, version: t.version },
      });
      navigate(`/topology-runs/${encodeURIComponent(run.run_id)}`);
    } catch (err) {
      setError(`The scheduler refused the run: ${(err as Error).message}`);
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="start-h" className="card">
      <h2 id="start-h">Start a run of version {t.version}</h2>
      <form className="stack" onSubmit={(e) => void submit(e)}>
        <TextArea
          label="Input (JSON)"
          rows={4}
          value={input}
          onChange={setInput}
          describedBy="input-help"
        />
        <p id="input-help" className="muted">
          What the nodes read as <code>{'{{input.…}}'}</code>
          {reads.length ? (
            <>
              ; this version reads{' '}
              {reads.map((r, i) => (
                <span key={r}>
                  {i ? ', ' : ''}
                  <code>{r}</code>
                </span>
              ))}
            </>
          ) : (
            '; this version reads none'
          )}
          .
        </p>
        {error ? (
          <p role="alert" className="error">
            {error}
          </p>
        ) : null}
        <div className="row">
          <button type="submit" className="primary" aria-disabled={busy}>
            Start run
          </button>
        </div>
      </form>
    </section>
  );
}
