import { ContractException } from '@baton/task-contract';
import { placeholderPointers } from '../../task-types';
import { NodeView } from '../node-state';
import { PlaceholderMissing, render } from '../placeholders';
import { bad, isObject } from './checks';
import { DefinitionContext, NodeBase, TaskNode } from './node-def';
import { Evaluation, NodeKindSpec } from './node-kind';

export const MAX_FOR_EACH = 10_000;
/** What a node template may not set: the run sets them. */
const RUN_OWNED = ['tenant', 'idempotency_key', 'repetition'];
const RUN_OWNED_INFO = ['parent_task_id', 'control_task_id'];

/** A task node: one task, or with `for_each` one task per element of a list (at most `concurrency` at once). */
export const taskKind: NodeKindSpec<TaskNode> = {
  kind: 'task',
  fields: ['task', 'for_each', 'concurrency'],
  present: (raw) => raw.task !== undefined,
  parse(raw, base: NodeBase, ctx) {
    const key = base.key;
    const t = raw.task;
    if (!isObject(t)) throw bad('task must be a task body (as POST /v1/tasks takes)', key);
    for (const f of RUN_OWNED)
      if (t[f] !== undefined) throw bad(`task.${f} is set by the run`, key);
    const info = t.create_info;
    if (!isObject(info) || typeof info.task_type !== 'string')
      throw bad('task.create_info.task_type is required', key);
    for (const f of RUN_OWNED_INFO)
      if (info[f] !== undefined) throw bad(`task.create_info.${f} is set by the run`, key);
    if (!ctx.taskTypes.has(info.task_type))
      throw bad(`task type ${info.task_type} is not registered: no worker has declared it`, key);
    checkLiteralParams(info.task_type, t.params, key, ctx);
    const node: TaskNode = { ...base, task: { ...t, create_info: { task_name: key, ...info } } };
    if (raw.for_each === undefined && raw.concurrency === undefined) return node;
    if (typeof raw.for_each !== 'string' || !/^\{\{[^{}]+\}\}$/.test(raw.for_each.trim()))
      throw bad('for_each must be one placeholder that gives a list, e.g. {{input.hosts}}', key);
    const c = raw.concurrency ?? MAX_FOR_EACH;
    if (!Number.isInteger(c) || (c as number) < 1 || (c as number) > MAX_FOR_EACH)
      throw bad(`concurrency must be an integer from 1 to ${MAX_FOR_EACH}`, key);
    return { ...node, for_each: raw.for_each.trim(), concurrency: c as number };
  },
  templates: (n) => [n.task, n.for_each],
  start(n, v, e) {
    if (n.for_each === undefined) {
      e.startTask(n, 0, render(n.task, e.scope()));
      e.set(n.key, 'ACTIVE');
      return;
    }
    fork(n, n.for_each, v, e);
  },
  advance(n, v, e) {
    if (n.for_each !== undefined && v.count !== undefined) startItems(n, v, e);
  },
};

/**
 * The node's params against its type's schema where they are literal: a value with a placeholder
 * is checked when the run makes the task, and a node whose params are one placeholder (a whole
 * object from the input) only then.
 */
function checkLiteralParams(
  taskType: string,
  params: unknown,
  key: string,
  ctx: DefinitionContext,
): void {
  if (!ctx.checkParams || !isObject(params)) return;
  try {
    ctx.checkParams(taskType, params, placeholderPointers(params));
  } catch (err) {
    if (!(err instanceof ContractException)) throw err;
    throw new ContractException(err.code, `node ${key}: ${err.message}`, {
      node: key,
      ...(err.data as object),
    });
  }
}

/** Reads the list and records it: the items start on this pass and the next ones. */
function fork(n: TaskNode, forEach: string, v: NodeView, e: Evaluation): void {
  const list = render(forEach, e.scope());
  if (!Array.isArray(list))
    throw new PlaceholderMissing(`for_each ${forEach} does not give a list`);
  if (list.length > MAX_FOR_EACH)
    throw new PlaceholderMissing(
      `for_each ${forEach} gives ${list.length} elements (at most ${MAX_FOR_EACH})`,
    );
  e.record(n, -1, 'forked', { count: list.length, list });
  e.setView(n.key, {
    ...v,
    status: list.length === 0 ? 'SUCCESS' : 'ACTIVE',
    count: list.length,
    row: {
      key: n.key,
      item: -1,
      state: 'forked',
      taskId: null,
      result: { count: list.length, list },
      createdAt: 0,
      updatedAt: 0,
    },
    result: { count: list.length, succeeded: 0, failed: 0, results: [] },
  });
}

/** Starts the list's next items, up to the node's concurrency. */
function startItems(n: TaskNode, v: NodeView, e: Evaluation): void {
  const list = (v.row?.result?.list as unknown[] | undefined) ?? [];
  const made = new Set(v.items.map((i) => i.row.item));
  let active = v.items.filter((i) => i.status === 'ACTIVE').length;
  const cap = n.concurrency ?? MAX_FOR_EACH;
  for (let item = 0; item < (v.count ?? 0) && active < cap; item++) {
    if (made.has(item)) continue;
    try {
      e.startTask(n, item, render(n.task, e.scope({ item: list[item], index: item })));
      active++;
    } catch (err) {
      if (!(err instanceof PlaceholderMissing)) throw err;
      e.record(n, item, 'failed', { error: err.message });
    }
  }
}
