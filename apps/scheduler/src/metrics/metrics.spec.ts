import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { COUNTER_NAMES, metricName } from '../logdumper';
import { FAMILIES } from './families';
import { Metrics } from './metrics';

/** Every non-spec source file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith('.ts') && !p.endsWith('spec.ts') ? [p] : [];
  });
}

describe('metric families', () => {
  const root = join(__dirname, '..');
  const used = new Set<string>();
  for (const file of sources(root))
    for (const m of readFileSync(file, 'utf8').matchAll(
      /\.(?:inc|set|observe|source)\(\s*(?:created \? )?'(baton_\w+)'(?:\s*:\s*'(baton_\w+)')?/g,
    ))
      for (const name of [m[1], m[2]]) if (name) used.add(name);
  for (const name of COUNTER_NAMES) used.add(metricName(name));

  it('has a family for every name the code uses', () => {
    expect(used.size).toBeGreaterThan(30);
    expect([...used].filter((n) => !(n in FAMILIES))).toEqual([]);
  });

  it('has no family the code never uses', () => {
    expect(Object.keys(FAMILIES).filter((n) => !used.has(n))).toEqual([]);
  });

  it('has no task id among the labels', () => {
    for (const f of Object.values(FAMILIES)) expect(f.labels).not.toContain('task_id');
  });
});

describe('Metrics', () => {
  it('shows counters, gauges, histograms and read gauges with their HELP and TYPE', async () => {
    const m = new Metrics();
    m.inc('baton_tasks_finished_total', { outcome: 'SUCCESS', task_type: 'demo.echo' }, 3);
    m.inc('baton_tasks_finished_total', { task_type: 'demo.echo', outcome: 'SUCCESS' });
    m.set('baton_webhook_queue_depth', {}, 7);
    m.observe('baton_worker_call_duration_seconds', { action: 'create', outcome: 'ok' }, 0.02);
    m.source('baton_queue_depth', async () => [{ labels: { lane: 'main' }, value: 5 }]);
    const text = await m.scrape();
    expect(text).toContain('# TYPE baton_tasks_finished_total counter');
    expect(text).toMatch(/# HELP baton_tasks_finished_total .*Per process/);
    // Labels in the family's order, whatever order the caller gave.
    expect(text).toContain('baton_tasks_finished_total{task_type="demo.echo",outcome="SUCCESS"} 4');
    expect(text).toContain('# TYPE baton_webhook_queue_depth gauge');
    expect(text).toContain('baton_webhook_queue_depth 7');
    expect(text).toContain(
      'baton_worker_call_duration_seconds_bucket{le="0.025",action="create",outcome="ok"} 1',
    );
    expect(text).toContain('baton_queue_depth{lane="main"} 5');
    expect(
      m.get('baton_tasks_finished_total', { task_type: 'demo.echo', outcome: 'SUCCESS' }),
    ).toBe(4);
  });

  it('refuses a name that is not a family', () => {
    const m = new Metrics();
    expect(() => m.inc('baton_made_up_total')).toThrow(/not a family/);
  });

  it('reads a source again on each scrape', async () => {
    const m = new Metrics();
    let n = 0;
    m.source('baton_queue_depth', async () => [{ labels: { lane: 'main' }, value: ++n }]);
    await m.scrape();
    expect(await m.scrape()).toContain('baton_queue_depth{lane="main"} 2');
  });
});
