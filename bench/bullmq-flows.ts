/**
 * The BullMQ flows the topology benchmark (bench/topology.bench.ts) sets against Baton's
 * topologies, built for `FlowProducer.add` in the BullMQ pipeline (bench/bullmq-pipeline.ts):
 *
 * - `fanout`: a parent job (the join) with `nodes` children; BullMQ runs the children on the
 *   pipeline's worker and the parent once every child completed. As Baton's for_each node over a
 *   list of `nodes` items, joined by one node: `nodes` + 1 jobs.
 * - `chain`: `nodes` jobs, each the only child of the next: the innermost (the first of the chain)
 *   runs first, each parent once its child completed. As Baton's chain of `nodes` nodes.
 *
 * Each job is a sync `demo.echo` task of the pipeline (its row, its worker calls), with the
 * params Baton's nodes render: `{i: <index>}` for a fork item or chain node, `{n: <count>}` for
 * the join.
 */
import type { FlowChildJob, FlowJob } from 'bullmq';
import type { JobData } from './bullmq-pipeline';

export type FlowShape = 'fanout' | 'chain';

/** A flow to add, every task of it (for their rows, written first), and the one that ends it. */
export interface BuiltFlow {
  flow: FlowJob;
  tasks: JobData[];
  last: JobData;
}

export function buildFlow(
  shape: FlowShape,
  queueName: string,
  prefix: string,
  nodes: number,
  nextId: () => string,
): BuiltFlow {
  const task = (name: string, params: Record<string, unknown>): JobData => ({
    taskId: nextId(),
    name: `${prefix}${name}`,
    params,
  });
  const job = (data: JobData, children?: FlowChildJob[]): FlowChildJob => ({
    name: 'demo.echo',
    queueName,
    data,
    opts: { jobId: data.taskId, attempts: 1 },
    ...(children ? { children } : {}),
  });
  if (shape === 'fanout') {
    const items = Array.from({ length: nodes }, (_, i) => task(String(i), { i }));
    const join = task('join', { n: nodes });
    return {
      flow: job(
        join,
        items.map((d) => job(d)),
      ),
      tasks: [...items, join],
      last: join,
    };
  }
  const chain = Array.from({ length: nodes }, (_, i) => task(String(i + 1), { i: i + 1 }));
  let flow = job(chain[0]);
  for (const data of chain.slice(1)) flow = job(data, [flow]);
  return { flow, tasks: chain, last: chain[chain.length - 1] };
}
