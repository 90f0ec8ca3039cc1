import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api';
import { Empty, ErrorState, JsonBlock, Loading, Time, useTitle } from '../components';
import { LogRule } from '../types';
import { LogRuleForm } from './LogRuleForm';
import { keys } from '../query-keys';

/** The task type a rule's template creates, if it names one. */
function templateType(rule: LogRule): string {
  const info = rule.template.create_info as { task_type?: unknown } | undefined;
  return typeof info?.task_type === 'string' ? info.task_type : '—';
}

/** Log rules: which log lines make which tasks; enable or disable each; create one, tried first. */
export function LogRules() {
  useTitle('Log rules');
  const client = useQueryClient();
  const rules = useQuery({
    queryKey: keys.logRules(),
    queryFn: () => api<LogRule[]>('/v1/log-rules'),
    refetchInterval: 10_000,
  });
  const [note, setNote] = useState<{ ok: boolean; text: string } | null>(null);
  const [creating, setCreating] = useState(false);
  const created = async (text: string): Promise<void> => {
    setCreating(false);
    setNote({ ok: true, text });
    await client.invalidateQueries({ queryKey: keys.logRules() });
  };

  const setEnabled = async (r: LogRule, enabled: boolean): Promise<void> => {
    try {
      await api(`/v1/log-rules/${encodeURIComponent(r.rule_id)}`, {
        method: 'PATCH',
        body: { enabled },
      });
      setNote({ ok: true, text: `${r.name}: ${enabled ? 'enabled' : 'disabled'}.` });
    } catch (err) {
      setNote({ ok: false, text: `${r.name}: ${(err as Error).message}` });
    }
    await client.invalidateQueries({ queryKey: keys.logRules() });
  };

  return (
    <>
      <div className="title-row">
        <h1>Log rules</h1>
        {creating ? null : (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            New rule
          </button>
        )}
      </div>
      {creating ? (
        <LogRuleForm onDone={(text) => void created(text)} onCancel={() => setCreating(false)} />
      ) : null}
      {note ? (
        <p role="status" className={note.ok ? undefined : 'error'}>
          {note.text}
        </p>
      ) : null}
      {rules.isPending ? (
        <Loading what="log rules" />
      ) : rules.isError ? (
        <ErrorState error={rules.error} what="log rules" />
      ) : rules.data.length === 0 ? (
        <Empty>
          No log rules. A rule turns matching log lines into tasks: make one with{' '}
          <strong>New rule</strong>.
        </Empty>
      ) : (
        <ul className="cards">
          {rules.data.map((r) => (
            <li key={r.rule_id} className="card">
              <h2>{r.name}</h2>
              <p>
                <span className={`badge ${r.enabled ? 'status-success' : 'status-pause'}`}>
                  {r.enabled ? 'enabled' : 'disabled'}
                </span>{' '}
                makes <strong>{templateType(r)}</strong> tasks from{' '}
                {r.sources.length ? r.sources.join(', ') : 'every source'}
                {r.tenant ? ` (tenant ${r.tenant})` : ''}; changed <Time iso={r.updated_at} />
              </p>
              <JsonBlock label={`Match of ${r.name}`} value={r.match} />
              <JsonBlock label={`Task template of ${r.name}`} value={r.template} />
              <p>
                <button type="button" onClick={() => void setEnabled(r, !r.enabled)}>
                  {r.enabled ? 'Disable' : 'Enable'}
                  <span className="visually-hidden"> {r.name}</span>
                </button>
              </p>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
