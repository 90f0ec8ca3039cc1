import { request } from 'undici';

/** One sample of a Prometheus text page: its name, labels and value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a page in the Prometheus text format (comments skipped). */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** The sum of the samples named `name` whose labels include `labels`. */
export function total(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** GET `${base}/metrics`, parsed. */
export async function scrape(base: string): Promise<Sample[]> {
  const res = await request(`${base}/metrics`);
  if (res.statusCode !== 200) throw new Error(`GET ${base}/metrics answered ${res.statusCode}`);
  return parseMetrics(await res.body.text());
}
