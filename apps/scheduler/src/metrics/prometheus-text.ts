import { Series } from './metrics';

/** A label value as the Prometheus text format quotes it. */
const quote = (v: string): string =>
  `"${v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`;

/**
 * Counters (and the gauges named) in the Prometheus text exposition format (version 0.0.4): a `# TYPE` line per name,
 * then one line per series, names and series sorted so the output is stable.
 */
export function prometheusText(
  counters: ReadonlyMap<string, readonly Series[]>,
  gauges: ReadonlySet<string> = new Set(),
): string {
  const lines: string[] = [];
  for (const name of [...counters.keys()].sort()) {
    lines.push(`# TYPE ${name} ${gauges.has(name) ? 'gauge' : 'counter'}`);
    const rows = counters.get(name)!.map((s) => {
      const labels = Object.keys(s.labels)
        .sort()
        .map((k) => `${k}=${quote(s.labels[k])}`);
      return `${name}${labels.length ? `{${labels.join(',')}}` : ''} ${s.value}`;
    });
    lines.push(...rows.sort());
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}
