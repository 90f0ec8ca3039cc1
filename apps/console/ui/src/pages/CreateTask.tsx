import { useQuery } from '@tanstack/react-query';
import { FormEvent, useState } from 'react';
import { ApiError, api } from '../api';
import {
  ErrorState,
  Field,
  Loading,
  useTitle,
  TextArea,
  objectOf,
  WholeNumberField,
} from '../components';
import { Link, navigate } from '../router';
import { CreateTask as CreateBody, Task, TaskType } from '../types';
import { keys } from '../query-keys';
import {
  FieldValues,
  ParamsFields,
  listOf,
  parseLabels,
  PropertySchema,
  paramsFrom,
  problemsByParam,
  propertiesOf,
  valuesFrom,
} from './ParamsFields';

/**
 * A form for one task: type, name, priority, its params as fields generated from the type's
 * schema (or as JSON: a type without one, or by choice), labels, lock keys and a deadline. The
 * API checks it; its word on a param shows under that param's field.
 */
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
  const [asJson, setAsJson] = useState(false);
  const [values, setValues] = useState<FieldValues>({});
  /** Params the schema does not name, kept across the two views. */
  const [extra, setExtra] = useState<Record<string, unknown>>({});
  const [params, setParams] = useState('{}');
  const [labels, setLabels] = useState('');
  const [lockKeys, setLockKeys] = useState('');
  const [deadline, setDeadline] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [problems, setProblems] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);

  const chosen = types.data?.find((t) => t.task_type === type);
  const schema = (chosen?.params_schema ?? null) as Record<string, unknown> | null;
  const props = propertiesOf(schema);
  const required = Array.isArray(schema?.required) ? (schema.required as string[]) : [];
  const form = props !== undefined && !asJson;

  const chooseType = (t: string): void => {
    setType(t);
    setProblems({});
    setExtra({});
    const p = propertiesOf(
      (types.data?.find((x) => x.task_type === t)?.params_schema ?? null) as Record<
        string,
        unknown
      > | null,
    );
    setValues(p ? valuesFrom(p, {}) : {});
    setParams(p ? JSON.stringify(paramsFrom(p, valuesFrom(p, {})), null, 2) : '{}');
  };

  /** The params as the current view has them. */
  const currentParams = (): Record<string, unknown> =>
    form
      ? paramsFrom(props as Record<string, PropertySchema>, values, extra)
      : objectOf('Params', params);

  const switchView = (): void => {
    setError(null);
    try {
      if (form) {
        setParams(JSON.stringify(currentParams(), null, 2));
      } else if (props) {
        const parsed = objectOf('Params', params);
        setValues(valuesFrom(props, parsed));
        setExtra(
          Object.fromEntries(Object.entries(parsed).filter(([k]) => !Object.hasOwn(props, k))),
        );
      }
      setAsJson(!asJson);
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setError(null);
    setProblems({});
    let body: CreateBody;
    try {
      const keysList = listOf(lockKeys);
      const labelMap = parseLabels(labels);
      body = {
        create_info: { task_type: type, task_name: name, important_level: Number(priority) },
        params: currentParams(),
        ...(keysList.length ? { lock_keys: keysList } : {}),
        ...(Object.keys(labelMap).length ? { labels: labelMap } : {}),
        ...(deadline.trim() ? { process_arg: { deadline_second: Number(deadline) } } : {}),
      };
    } catch (err) {
      setError(`${(err as Error).message}`);
      return;
    }
    setBusy(true);
    try {
      const task = await api<Task>('/v1/tasks', { method: 'POST', body });
      navigate(`/tasks/${task.task_id}`);
    } catch (err) {
      if (err instanceof ApiError && form) {
        const { byParam, rest } = problemsByParam(err.data);
        const shown = Object.fromEntries(
          Object.entries(byParam).filter(([k]) => props && Object.hasOwn(props, k)),
        );
        const other = Object.entries(byParam)
          .filter(([k]) => !(props && Object.hasOwn(props, k)))
          .map(([k, m]) => `${k}: ${m}`);
        setProblems(shown);
        setError(
          Object.keys(shown).length && !other.length && !rest.length
            ? 'The params are not what this type takes: see the fields above.'
            : [err.message, ...other, ...rest].join(' · '),
        );
      } else setError((err as Error).message);
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
        <form className="stack" noValidate onSubmit={(e) => void submit(e)}>
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
          <WholeNumberField
            label="Priority (0–9, 9 highest)"
            min={0}
            max={9}
            value={priority}
            onChange={setPriority}
          />
          {form ? (
            <ParamsFields
              props={props}
              required={required}
              values={values}
              onChange={(next, edited) => {
                setValues(next);
                if (problems[edited]) {
                  const { [edited]: _gone, ...rest } = problems;
                  setProblems(rest);
                }
              }}
              problems={problems}
            />
          ) : (
            <TextArea label="Params (JSON)" rows={6} value={params} onChange={setParams} />
          )}
          {props ? (
            <p>
              <button type="button" className="link" onClick={switchView}>
                {form ? 'Edit the params as JSON' : 'Edit the params as fields'}
              </button>
            </p>
          ) : null}
          <TextArea
            label="Labels (key=value, one a line)"
            rows={2}
            value={labels}
            onChange={setLabels}
          />
          <Field label="Lock keys (comma-separated)">
            {(id) => (
              <input id={id} value={lockKeys} onChange={(e) => setLockKeys(e.target.value)} />
            )}
          </Field>
          <WholeNumberField
            label="Deadline (seconds from its start, optional)"
            min={1}
            value={deadline}
            onChange={setDeadline}
          />
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
