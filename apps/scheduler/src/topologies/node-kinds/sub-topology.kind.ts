import { render } from '../placeholders';
import { bad, isObject } from './checks';
import { SubTopologyNode } from './node-def';
import { NodeKindSpec } from './node-kind';

/** A sub-topology: another definition run as a child run, its input rendered from this run's. */
export const subTopologyKind: NodeKindSpec<SubTopologyNode> = {
  kind: 'topology',
  fields: ['topology'],
  present: (raw) => raw.topology !== undefined,
  parse(raw, base, ctx) {
    const s = raw.topology;
    const key = base.key;
    if (!isObject(s) || typeof s.name !== 'string')
      throw bad('topology.name must name a definition', key);
    if (!ctx.topologies.has(s.name)) throw bad(`topology ${s.name} is not defined`, key);
    if (s.version !== undefined && (!Number.isInteger(s.version) || (s.version as number) < 1))
      throw bad('topology.version must be a positive integer', key);
    if (s.input !== undefined && !isObject(s.input)) throw bad('topology.input is an object', key);
    return {
      ...base,
      topology: {
        name: s.name,
        ...(s.version !== undefined ? { version: s.version as number } : {}),
        input: (s.input as Record<string, unknown>) ?? {},
      },
    };
  },
  templates: (n) => [n.topology.input],
  start(n, _v, e) {
    e.plan.starts.push({
      key: n.key,
      item: 0,
      kind: 'topology',
      body: { ...n.topology, input: render(n.topology.input, e.scope()) },
    });
    e.set(n.key, 'ACTIVE');
  },
};
