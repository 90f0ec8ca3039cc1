import { useQuery } from '@tanstack/react-query';
import { FormEvent, useState } from 'react';
import { api } from '../api';
import { ErrorState, Field, Loading, useTitle, TextArea } from '../components';
import { Link, navigate } from '../router';
import { CreateTask as CreateBody, Task, TaskType } from '../types';
import { keys } from '../query-keys';

/** Params to start from for the template worker's demo types; any other type starts with {}. */
const EXAMPLES: Record<string, string> = {
  'demo.sleep': '{\n  "seconds": 5\n}',
  'demo.echo': '{\n  "message": "hello"\n}',
  'demo.flaky': '{\n  "fail_times": 1\n}',
};

/** A form for one task: type, name, priority, params. The API checks it and says what is wrong. */
export function CreateTask() {
  useTitle('New task');
  const types = useQuery({
    queryKey: keys.taskTypes(),
    queryFn: () => api<TaskType[]>('/v1/task-types'),
    staleTime: 60_000,
  });
  const [type, setType] = useState('');
  const [name, setName] = useState('');
  const [priority, setPriority] = useState('5');
  const [params, setParams] = useState('{}');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const chooseType = (t: string): void => {
    setType(t);
    setParams(EXAMPLES[t] ?? '{}');
  };

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setError(null);
    let parsed: Record<string, unknown>;
    try {
      const value: unknown = JSON.parse(params);
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        throw new Error('a JSON object is needed');
      parsed = value as Record<string, unknown>;
    } catch (err) {
      setError(`Params: ${(err as Error).message}`);
      return;
    }
    const body: CreateBody = {
      create_info: { task_type: type, task_name: name, important_level: Number(priority) },
      params: parsed,
    };
    setBusy(true);
    try {
      const task = await api<Task>('/v1/tasks', { method: 'POST', body });
      navigate(`/tasks/${task.task_id}`);
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };

  return (
    <>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/tasks">Tasks</Link> / <span aria-current="page">New</span>
      </nav>
      <h1>New task</h1>
      {types.isPending ? (
        <Loading what="task types" />
      ) : types.isError ? (
        <ErrorState error={types.error} what="task types" />
      ) : (
        <form className="stack" onSubmit={(e) => void submit(e)}>
          <Field label="Type">
            {(id) => (
              <select id={id} required value={type} onChange={(e) => chooseType(e.target.value)}>
                <option value="" disabled>
                  choose a type
                </option>
                {types.data.map((t) => (
                  <option key={t.task_type} value={t.task_type}>
                    {t.task_type} ({t.blocking})
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Name">
            {(id) => (
              <input
                id={id}
                required
                maxLength={200}
                value={name}
                onChange={(e) => setName(e.target.value)}
              />
            )}
          </Field>
          <Field label="Priority (0–9, 9 highest)">
            {(id) => (
              <input
                id={id}
                type="number"
                min={0}
                max={9}
                step={1}
                value={priority}
                onChange={(e) => setPriority(e.target.value)}
              />
            )}
          </Field>
          <TextArea label="Params (JSON)" rows={6} value={params} onChange={setParams} />
          {error ? (
            <p className="error" role="alert">
              {error}
            </p>
          ) : null}
          <div className="row">
            <button type="submit" className="primary" disabled={busy}>
              {busy ? 'Creating…' : 'Create task'}
            </button>
            <Link href="/tasks" className="button">
              Back to tasks
            </Link>
          </div>
        </form>
      )}
    </>
  );
}
