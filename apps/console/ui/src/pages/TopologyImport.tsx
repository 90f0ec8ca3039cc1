import { ChangeEvent, FormEvent, useState } from 'react';
import { ApiError, api } from '../api';
import { Field, useTitle } from '../components';
import { Link, navigate } from '../router';
import { DagGraph } from '../topology/Graph';
import { Topology, TopologyCheck, drawableNodes, parseDefinitionText } from '../topology/model';

/** A problem the check found: on a node when the scheduler named one, else about the whole. */
interface Problem {
  node: string | null;
  message: string;
}

type Verdict =
  | { kind: 'idle' }
  | { kind: 'checking' }
  | { kind: 'valid'; nodes: number }
  | { kind: 'invalid'; problems: Problem[] };

/** The scheduler's refusal as problems: each names its node (data.node, or data.errors[]). */
function problemsOf(err: unknown): Problem[] {
  if (!(err instanceof ApiError)) return [{ node: null, message: String(err) }];
  const data = (err.data ?? {}) as { node?: unknown; errors?: unknown };
  const strip = (node: string | null, m: string): string =>
    node && m.startsWith(`node ${node}: `) ? m.slice(`node ${node}: `.length) : m;
  if (Array.isArray(data.errors) && data.errors.length) {
    return data.errors.map((e: { node?: unknown; message?: unknown }) => {
      const node = typeof e.node === 'string' ? e.node : null;
      return { node, message: strip(node, String(e.message ?? '')) };
    });
  }
  const node = typeof data.node === 'string' ? data.node : null;
  return [{ node, message: strip(node, err.message) }];
}

/**
 * Import a definition from a YAML or JSON file (or pasted): the scheduler checks it first
 * (POST /v1/topologies/check, nothing stored) and each problem is drawn on the node it names;
 * saving then stores it as the next version of its name.
 */
export function TopologyImport() {
  useTitle('Import a topology');
  const [text, setText] = useState('');
  const [fileName, setFileName] = useState<string | null>(null);
  const [verdict, setVerdict] = useState<Verdict>({ kind: 'idle' });
  const [checkedText, setCheckedText] = useState<string | null>(null);
  const [saveError, setSaveError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);

  const parsed = text.trim() ? parseDefinitionText(text) : null;
  const body = parsed?.ok ? parsed.body : null;

  const check = async (source: string): Promise<void> => {
    setSaveError(null);
    setCheckedText(source);
    const p = parseDefinitionText(source);
    if (!p.ok) {
      setVerdict({ kind: 'invalid', problems: [{ node: null, message: p.error }] });
      return;
    }
    setVerdict({ kind: 'checking' });
    try {
      const ok = await api<TopologyCheck>('/v1/topologies/check', { method: 'POST', body: p.body });
      setVerdict({ kind: 'valid', nodes: ok.nodes });
    } catch (err) {
      setVerdict({ kind: 'invalid', problems: problemsOf(err) });
    }
  };

  const pick = async (e: ChangeEvent<HTMLInputElement>): Promise<void> => {
    const file = e.target.files?.[0];
    if (!file) return;
    const content = await file.text();
    setFileName(file.name);
    setText(content);
    await check(content);
  };

  const save = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    // Only what the scheduler accepted, unchanged since, is saved.
    if (!canSave || !body) return;
    setSaving(true);
    setSaveError(null);
    try {
      const t = await api<Topology>('/v1/topologies', { method: 'POST', body });
      navigate(`/topologies/${encodeURIComponent(t.name)}?version=${t.version}`);
    } catch (err) {
      setVerdict({ kind: 'invalid', problems: problemsOf(err) });
      setSaveError(`The scheduler refused to save it: ${(err as Error).message}`);
      setSaving(false);
    }
  };

  const stale = checkedText !== text;
  const problems = verdict.kind === 'invalid' && !stale ? verdict.problems : [];
  const general = problems.filter(
    (p) => p.node === null || !drawableNodes(body).some((n) => n.key === p.node),
  );
  const onNodes = problems.filter((p) => !general.includes(p));
  const drawn = drawableNodes(body);
  const canSave = verdict.kind === 'valid' && !stale && !saving;

  return (
    <>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/topologies">Topologies</Link> / <span aria-current="page">Import</span>
      </nav>
      <h1>Import a topology</h1>
      <form className="stack wide" onSubmit={(e) => void save(e)}>
        <Field label="Definition file (YAML or JSON)">
          {(id) => (
            <input
              id={id}
              type="file"
              accept=".yaml,.yml,.json,application/json"
              onChange={(e) => void pick(e)}
            />
          )}
        </Field>
        <Field label="Or paste the definition (YAML or JSON)">
          {(id) => (
            <textarea
              id={id}
              rows={14}
              spellCheck={false}
              value={text}
              onChange={(e) => {
                setText(e.target.value);
                setFileName(null);
              }}
            />
          )}
        </Field>
        <div className="row">
          <button
            type="button"
            aria-disabled={!text.trim()}
            onClick={() => text.trim() && void check(text)}
          >
            Check
          </button>
          <button
            type="submit"
            className="primary"
            aria-disabled={!canSave}
            title={canSave ? undefined : 'check the definition first'}
          >
            Save as a new version
          </button>
          {fileName ? <span className="muted">from {fileName}</span> : null}
        </div>
      </form>

      <div aria-live="polite">
        {verdict.kind === 'checking' ? <p role="status">Checking…</p> : null}
        {verdict.kind === 'valid' && !stale ? (
          <p role="status" className="report">
            The scheduler accepts this definition ({verdict.nodes} node
            {verdict.nodes === 1 ? '' : 's'}). Save it to store it as a new version.
          </p>
        ) : null}
        {stale && verdict.kind !== 'idle' && verdict.kind !== 'checking' ? (
          <p className="muted">The text changed since the last check: check it again.</p>
        ) : null}
      </div>
      {problems.length ? (
        <div className="report error" role="alert">
          <p>
            <strong>
              The scheduler refused this definition ({problems.length} problem
              {problems.length === 1 ? '' : 's'}).
            </strong>
          </p>
          <ul>
            {general.map((p) => (
              <li key={p.message}>{p.message}</li>
            ))}
            {onNodes.map((p) => (
              <li key={`${p.node}:${p.message}`}>
                node <strong>{p.node}</strong>: {p.message} (marked in the graph)
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {saveError ? <p className="error">{saveError}</p> : null}

      {drawn.length ? (
        <>
          <h2>Preview</h2>
          <DagGraph
            label="Graph of the definition being imported"
            nodes={drawn.map((n) => ({
              key: n.key,
              depends_on: n.depends_on,
              kind: n.label,
              problem:
                onNodes
                  .filter((p) => p.node === n.key)
                  .map((p) => p.message)
                  .join('; ') || null,
            }))}
          />
        </>
      ) : null}
    </>
  );
}
