import { Field, TextArea, objectOf, WholeNumberField } from '../components';
import { TaskType, Timer } from '../types';
import { Topology } from '../topology/model';
import {
  FieldValues,
  ParamsFields,
  PropertySchema,
  fieldsKeep,
  labelsText,
  paramsFrom,
  propertiesOf,
  valuesFrom,
} from './ParamsFields';

/** What a timer's fires start, as the form holds it. */
export interface StartsDraft {
  starts: 'task' | 'topology';
  taskType: string;
  taskName: string;
  priority: string;
  /** Params as fields (a type with a schema) or as JSON. */
  asJson: boolean;
  values: FieldValues;
  /** Params the schema does not name, kept across the two views. */
  extra: Record<string, unknown>;
  params: string;
  labels: string;
  lockKeys: string;
  deadline: string;
  topology: string;
  topologyVersion: string;
  input: string;
}

export const schemaOf = (types: TaskType[], type: string): Record<string, unknown> | null =>
  (types.find((t) => t.task_type === type)?.params_schema ?? null) as Record<
    string,
    unknown
  > | null;

/** The draft of what a timer starts: the timer's own, or a new task's with the schema's defaults. */
export function startsDraftOf(t: Timer | null, types: TaskType[]): StartsDraft {
  const task = t?.task;
  const params = (task?.params ?? {}) as Record<string, unknown>;
  const type = task?.create_info.task_type ?? '';
  const props = propertiesOf(schemaOf(types, type));
  // A timer's params come back from the fields unchanged, or the form starts as JSON.
  const asJson = props !== undefined && t !== null && !fieldsKeep(props, params);
  return {
    starts: t?.topology ? 'topology' : 'task',
    taskType: type,
    taskName: task?.create_info.task_name ?? '',
    priority: String(task?.create_info.important_level ?? 5),
    asJson,
    values: props ? valuesFrom(props, params, t === null) : {},
    extra: props
      ? Object.fromEntries(Object.entries(params).filter(([k]) => !Object.hasOwn(props, k)))
      : {},
    params: JSON.stringify(params, null, 2),
    labels: labelsText(t?.topology ? t.topology.labels : task?.labels),
    lockKeys: (task?.lock_keys ?? []).join(', '),
    deadline: task?.process_arg?.deadline_second ? String(task.process_arg.deadline_second) : '',
    topology: t?.topology?.name ?? '',
    topologyVersion: t?.topology?.version ? String(t.topology.version) : '',
    input: JSON.stringify(t?.topology?.input ?? {}, null, 2),
  };
}

/** The params the draft stands for, in the view it is in. Throws naming what does not parse. */
export function paramsOf(d: StartsDraft, types: TaskType[]): Record<string, unknown> {
  const props = propertiesOf(schemaOf(types, d.taskType));
  return props && !d.asJson
    ? paramsFrom(props as Record<string, PropertySchema>, d.values, d.extra)
    : objectOf('Params', d.params);
}

/**
 * The fields of what each fire starts: a task (type, name, priority, its params as fields from
 * the type's schema or as JSON, labels, lock keys, deadline), or a run of a topology (definition,
 * version, input, labels).
 */
export function TimerStarts({
  d,
  set,
  types,
  topologies,
  problems,
  onError,
}: {
  d: StartsDraft;
  set: (next: StartsDraft) => void;
  types: TaskType[];
  topologies: Topology[];
  problems: Record<string, string>;
  onError: (message: string | null) => void;
}) {
  const schema = schemaOf(types, d.taskType);
  const props = propertiesOf(schema);
  const required = Array.isArray(schema?.required) ? (schema.required as string[]) : [];
  const put = (k: keyof StartsDraft) => (value: string) => set({ ...d, [k]: value });
  const text = (k: keyof StartsDraft) => (e: { target: { value: string } }) =>
    put(k)(e.target.value);

  const chooseType = (type: string): void => {
    const p = propertiesOf(schemaOf(types, type));
    const values = p ? valuesFrom(p, {}) : {};
    set({
      ...d,
      taskType: type,
      asJson: false,
      values,
      extra: {},
      params: JSON.stringify(p ? paramsFrom(p, values) : {}, null, 2),
    });
  };

  const switchView = (): void => {
    onError(null);
    try {
      if (!props) return;
      if (!d.asJson) {
        set({ ...d, asJson: true, params: JSON.stringify(paramsOf(d, types), null, 2) });
      } else {
        const parsed = objectOf('Params', d.params);
        // Fields that would give back other params (a box for an absent yes/no, text for a
        // number...) would change them on save: these stay JSON.
        if (!fieldsKeep(props, parsed))
          throw new Error(
            'These params cannot be shown as fields without changing them: edit them as JSON.',
          );
        set({
          ...d,
          asJson: false,
          values: valuesFrom(props, parsed, false),
          extra: Object.fromEntries(
            Object.entries(parsed).filter(([k]) => !Object.hasOwn(props, k)),
          ),
        });
      }
    } catch (err) {
      onError((err as Error).message);
    }
  };

  return (
    <fieldset className="stack">
      <legend>Each fire starts</legend>
      <Field label="Starts">
        {(id) => (
          <select id={id} value={d.starts} onChange={text('starts')}>
            <option value="task">a task</option>
            <option value="topology">a topology run</option>
          </select>
        )}
      </Field>
      {d.starts === 'topology' ? (
        <>
          <div className="row">
            <Field label="Topology">
              {(id) => (
                <select id={id} required value={d.topology} onChange={text('topology')}>
                  <option value="" disabled>
                    choose a definition
                  </option>
                  {topologies.map((t) => (
                    <option key={t.name} value={t.name}>
                      {t.name}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <WholeNumberField
              label="Version (blank: the newest at each fire)"
              min={1}
              value={d.topologyVersion}
              onChange={put('topologyVersion')}
            />
          </div>
          <TextArea
            label="Run input (JSON)"
            rows={4}
            value={d.input}
            onChange={(input) => set({ ...d, input })}
          />
        </>
      ) : (
        <>
          <div className="row">
            <Field label="Task type">
              {(id) => (
                <select
                  id={id}
                  required
                  value={d.taskType}
                  onChange={(e) => chooseType(e.target.value)}
                >
                  <option value="" disabled>
                    choose a type
                  </option>
                  {types.map((t) => (
                    <option key={t.task_type} value={t.task_type}>
                      {t.task_type}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <Field label="Task name">
              {(id) => (
                <input id={id} maxLength={200} value={d.taskName} onChange={text('taskName')} />
              )}
            </Field>
            <WholeNumberField
              label="Priority (0–9, 9 highest)"
              min={0}
              max={9}
              value={d.priority}
              onChange={put('priority')}
            />
          </div>
          {props && !d.asJson ? (
            <ParamsFields
              props={props}
              required={required}
              values={d.values}
              onChange={(values) => set({ ...d, values })}
              problems={problems}
            />
          ) : (
            <TextArea
              label="Task params (JSON)"
              rows={4}
              value={d.params}
              onChange={(params) => set({ ...d, params })}
            />
          )}
          {props ? (
            <p>
              <button type="button" className="link" onClick={switchView}>
                {d.asJson ? 'Edit the params as fields' : 'Edit the params as JSON'}
              </button>
            </p>
          ) : null}
          <div className="row">
            <Field label="Lock keys (comma-separated)">
              {(id) => <input id={id} value={d.lockKeys} onChange={text('lockKeys')} />}
            </Field>
            <WholeNumberField
              label="Deadline (seconds from its start, optional)"
              min={1}
              value={d.deadline}
              onChange={put('deadline')}
            />
          </div>
        </>
      )}
      <TextArea
        label="Labels (key=value, one a line)"
        rows={2}
        value={d.labels}
        onChange={(labels) => set({ ...d, labels })}
      />
    </fieldset>
  );
}
