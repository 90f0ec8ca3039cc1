import { FormEvent, useState } from 'react';
import { api } from '../api';
import { Field, JsonBlock, TextArea, objectOf } from '../components';
import { LogRuleTest } from '../ops-types';

const TEMPLATE = `{
  "create_info": { "task_type": "demo.echo", "task_name": "clean {{host}}" },
  "params": { "host": "{{host}}" }
}`;

/**
 * A new log rule: what it matches (a regular expression, or conditions on the fields of a JSON
 * line) and the task it makes. A pasted line can be tried first (POST /v1/log-rules/test, the
 * LogDumper's own matcher; nothing is saved), then the rule saved.
 */
export function LogRuleForm({
  onDone,
  onCancel,
}: {
  onDone: (text: string) => void;
  onCancel: () => void;
}) {
  const [name, setName] = useState('');
  const [sources, setSources] = useState('*');
  const [kind, setKind] = useState<'regex' | 'json'>('regex');
  const [regex, setRegex] = useState('disk full on (?<host>[\\w.-]+)');
  const [flags, setFlags] = useState('');
  const [json, setJson] = useState('{\n  "level": { "equals": "error" }\n}');
  const [template, setTemplate] = useState(TEMPLATE);
  const [line, setLine] = useState('');
  const [source, setSource] = useState('http:test');
  const [result, setResult] = useState<LogRuleTest | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const rule = (): Record<string, unknown> => ({
    name: name || 'untitled',
    sources: sources
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    match:
      kind === 'regex'
        ? { regex, ...(flags ? { flags } : {}) }
        : { json: objectOf('Conditions', json) },
    template: objectOf('Task template', template),
  });

  const run = async (what: () => Promise<void>): Promise<void> => {
    setError(null);
    setBusy(true);
    try {
      await what();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const test = (): Promise<void> =>
    run(async () => {
      setResult(null);
      setResult(
        await api<LogRuleTest>('/v1/log-rules/test', {
          method: 'POST',
          body: { rule: rule(), line, source },
        }),
      );
    });

  const save = (e: FormEvent): Promise<void> => {
    e.preventDefault();
    return run(async () => {
      await api('/v1/log-rules', { method: 'POST', body: { ...rule(), name } });
      onDone(`${name}: created.`);
    });
  };

  return (
    <section className="panel" aria-labelledby="rule-form">
      <h2 id="rule-form">New log rule</h2>
      <form className="stack" onSubmit={(e) => void save(e)}>
        <Field label="Name">
          {(id) => (
            <input
              id={id}
              required
              maxLength={100}
              value={name}
              onChange={(e) => setName(e.target.value)}
            />
          )}
        </Field>
        <Field label="Sources (comma-separated: *, http:name, file:*, ...)">
          {(id) => <input id={id} value={sources} onChange={(e) => setSources(e.target.value)} />}
        </Field>
        <Field label="Match">
          {(id) => (
            <select
              id={id}
              value={kind}
              onChange={(e) => setKind(e.target.value as 'regex' | 'json')}
            >
              <option value="regex">a regular expression (named groups become placeholders)</option>
              <option value="json">conditions on the fields of a JSON line</option>
            </select>
          )}
        </Field>
        {kind === 'regex' ? (
          <div className="row">
            <Field label="Regular expression">
              {(id) => (
                <input
                  id={id}
                  size={40}
                  spellCheck={false}
                  value={regex}
                  onChange={(e) => setRegex(e.target.value)}
                />
              )}
            </Field>
            <Field label="Flags (i, m, s)">
              {(id) => (
                <input id={id} size={4} value={flags} onChange={(e) => setFlags(e.target.value)} />
              )}
            </Field>
          </div>
        ) : (
          <TextArea
            label="Conditions (JSON: field path → equals or exists)"
            rows={4}
            value={json}
            onChange={setJson}
          />
        )}
        <TextArea
          label="Task template (JSON, {{placeholders}} filled from the line)"
          rows={5}
          value={template}
          onChange={setTemplate}
        />
        <fieldset className="stack">
          <legend>Try it on a line (nothing is saved)</legend>
          <TextArea label="Log line" rows={2} value={line} onChange={setLine} />
          <Field label="From source">
            {(id) => <input id={id} value={source} onChange={(e) => setSource(e.target.value)} />}
          </Field>
          <div className="row">
            <button type="button" disabled={busy || !line} onClick={() => void test()}>
              Test line
            </button>
          </div>
          <div aria-live="polite">{result ? <TestResult result={result} /> : null}</div>
        </fieldset>
        {error ? (
          <p className="error" role="alert">
            {error}
          </p>
        ) : null}
        <div className="row">
          <button type="submit" className="primary" disabled={busy}>
            Save rule
          </button>
          <button type="button" onClick={onCancel}>
            Close
          </button>
        </div>
      </form>
    </section>
  );
}

function TestResult({ result }: { result: LogRuleTest }) {
  if (!result.matched)
    return (
      <p className="report error" data-testid="rule-test">
        <strong>No match:</strong> this line makes no task.
      </p>
    );
  return (
    <div
      className={`report${result.task_error || !result.source_applies ? ' error' : ''}`}
      data-testid="rule-test"
    >
      <p>
        <strong>Matches.</strong>{' '}
        {result.task_error
          ? `The scheduler would refuse the task: ${result.task_error}`
          : result.source_applies
            ? 'It would make this task:'
            : 'But the rule does not read that source: no task would be made from it there.'}
      </p>
      <JsonBlock label="Task it would make" value={result.task} open />
    </div>
  );
}
