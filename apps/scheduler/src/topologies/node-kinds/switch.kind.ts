import { placeholderPaths, render } from '../placeholders';
import { bad, isObject, strings } from './checks';
import { SwitchNode } from './node-def';
import { NodeKindSpec } from './node-kind';

/** A switch: renders its value and takes the nodes of the matching case (else `default`). */
export const switchKind: NodeKindSpec<SwitchNode> = {
  kind: 'switch',
  fields: ['switch'],
  present: (raw) => raw.switch !== undefined,
  parse(raw, base) {
    const s = raw.switch;
    const key = base.key;
    if (!isObject(s) || typeof s.value !== 'string' || placeholderPaths(s.value).length === 0)
      throw bad('switch.value must be a placeholder, e.g. {{nodes.check.result.mode}}', key);
    if (!isObject(s.cases) || Object.keys(s.cases).length === 0)
      throw bad('switch.cases must map values to lists of node keys', key);
    for (const [v, ks] of Object.entries(s.cases))
      if (!strings(ks)) throw bad(`switch.cases.${v} must be a list of node keys`, key);
    const dflt = s.default ?? [];
    if (!strings(dflt)) throw bad('switch.default must be a list of node keys', key);
    return {
      ...base,
      switch: { value: s.value, cases: s.cases as Record<string, string[]>, default: dflt },
    };
  },
  templates: (n) => [n.switch.value],
  checkGraph(n, byKey) {
    for (const k of [...Object.values(n.switch.cases).flat(), ...n.switch.default]) {
      const target = byKey.get(k);
      if (!target) throw bad(`switch names ${k}, which is not a node`, n.key);
      if (!target.depends_on.includes(n.key))
        throw bad(`switch names ${k}, which does not depend on ${n.key}`, n.key);
    }
  },
  start(n, _v, e) {
    const value = render(n.switch.value, e.scope());
    const label = typeof value === 'string' ? value : JSON.stringify(value);
    const hit = Object.prototype.hasOwnProperty.call(n.switch.cases, label);
    const result = { value: label, case: hit ? label : 'default' };
    e.record(n, 0, 'switched', result);
    e.set(n.key, 'SUCCESS', result);
    e.choose(n, label);
  },
};

/** The nodes a switch names, and those of the case it took (undefined while it has not chosen). */
export function switchChoice(
  n: SwitchNode,
  value: string | undefined,
): { listed: Set<string>; taken: Set<string> | undefined } {
  const s = n.switch;
  const listed = new Set([...Object.values(s.cases).flat(), ...s.default]);
  if (value === undefined) return { listed, taken: undefined };
  const hit = Object.prototype.hasOwnProperty.call(s.cases, value);
  return { listed, taken: new Set(hit ? s.cases[value] : s.default) };
}
