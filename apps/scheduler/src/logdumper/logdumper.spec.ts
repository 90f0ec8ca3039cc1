import { Metrics } from '../metrics';
import { Clock, IdGenerator } from '../common';
import { TasksService } from '../tasks';
import { LogRuleModel } from './log-rule.model';
import { LogRulesRepository } from './log-rules.repository';
import { LogRulesService } from './log-rules.service';
import { LogDumperCounters } from './logdumper.counters';
import { RedisStreamDriver, StreamEntry } from './sources/redis-stream.driver';
import { StreamConsumer } from './sources/stream-consumer';
import { LogProcessorService } from './log-processor.service';

describe('LogDumperCounters', () => {
  it('is a view of Metrics: counts are read from the registry, per source and in total', () => {
    const metrics = new Metrics();
    const counters = new LogDumperCounters(metrics);
    counters.add('file:b', 'ingested', 3);
    counters.add('file:a', 'created');
    metrics.inc('baton_log_records_created_total', { source: 'file:a' }, 2);
    metrics.inc('baton_timer_fires_total', { timer: 't' });
    const snap = counters.snapshot();
    expect(Object.keys(snap.sources)).toEqual(['file:a', 'file:b']);
    expect(snap.sources['file:a']).toMatchObject({ created: 3, ingested: 0 });
    expect(snap.totals).toMatchObject({ created: 3, ingested: 3, dropped: 0 });
    snap.sources['file:a'].created = 99;
    expect(counters.snapshot().sources['file:a'].created).toBe(3);
    expect(metrics.series('baton_log_records_created_total')).toEqual([
      { labels: { source: 'file:a' }, value: 3 },
    ]);
  });
});

describe('LogRulesService active rules', () => {
  const rule: LogRuleModel = {
    ruleId: 'r1',
    name: 'r',
    sources: ['*'],
    match: { regex: 'x' },
    template: { create_info: { task_type: 'demo.echo', task_name: 'x' } },
    tenant: null,
    enabled: true,
    createdAt: 0,
    updatedAt: 0,
  };

  it('reads and compiles the enabled rules once per 2 s, and again after a local change', async () => {
    let now = 0;
    const listEnabled = jest.fn(() => Promise.resolve([rule]));
    const repo = {
      listEnabled,
      save: () => Promise.resolve(),
      remove: () => Promise.resolve(true),
    } as unknown as LogRulesRepository;
    const service = new LogRulesService(
      repo,
      { taskId: () => 'r2' } as unknown as IdGenerator,
      { now: () => now } as unknown as Clock,
      {} as unknown as TasksService,
    );
    await service.activeFor('file:a');
    await service.activeFor('stream:b');
    now = 1999;
    await service.activeFor('file:a');
    expect(listEnabled).toHaveBeenCalledTimes(1);
    now = 2000;
    await service.activeFor('file:a');
    expect(listEnabled).toHaveBeenCalledTimes(2);
    await service.remove('r1');
    await service.activeFor('file:a');
    expect(listEnabled).toHaveBeenCalledTimes(3);
  });
});

describe('LogRulesService with a rule stored before RE2', () => {
  it('skips a rule whose regex RE2 does not take and runs the others', async () => {
    const base = {
      sources: ['*'],
      template: { create_info: { task_type: 'demo.echo', task_name: 'x' } },
      tenant: null,
      enabled: true,
      createdAt: 0,
      updatedAt: 0,
    };
    const old: LogRuleModel = { ...base, ruleId: 'old', name: 'old', match: { regex: 'a(?=b)' } };
    const fine: LogRuleModel = { ...base, ruleId: 'fine', name: 'fine', match: { regex: 'ERROR' } };
    const repo = {
      listEnabled: () => Promise.resolve([old, fine]),
    } as unknown as LogRulesRepository;
    const service = new LogRulesService(
      repo,
      {} as unknown as IdGenerator,
      { now: () => 0 } as unknown as Clock,
      {} as unknown as TasksService,
    );
    const active = await service.activeFor('file:a');
    expect(active.map((a) => a.rule.ruleId)).toEqual(['fine']);
  });
});

describe('StreamConsumer', () => {
  it('reads its own pending list only at start and after a failed pass, and claims every claimIdleMs/2', async () => {
    let now = 0;
    const calls: string[] = [];
    let failNext = false;
    const driver = {
      ensureGroup: () => Promise.resolve(),
      readOwnPending: () => (calls.push('pending'), Promise.resolve([] as StreamEntry[])),
      claimStale: () => (calls.push('claim'), Promise.resolve({ next: '0-0', entries: [] })),
      readNew: () => {
        calls.push('new');
        if (failNext) {
          failNext = false;
          return Promise.reject(new Error('redis down'));
        }
        return Promise.resolve([] as StreamEntry[]);
      },
      ack: () => Promise.resolve(),
    } as unknown as RedisStreamDriver;
    const consumer = new StreamConsumer(
      { name: 's', batch: 10, claimIdleMs: 1000, blockMs: 10 },
      driver,
      { process: () => Promise.resolve([]) } as unknown as LogProcessorService,
      () => now,
    );
    await consumer.pass();
    expect(calls.splice(0)).toEqual(['pending', 'claim', 'new']);
    now = 499;
    await consumer.pass();
    expect(calls.splice(0)).toEqual(['new']);
    now = 500;
    failNext = true;
    await expect(consumer.pass()).rejects.toThrow('redis down');
    expect(calls.splice(0)).toEqual(['claim', 'new']);
    now = 600;
    await consumer.pass();
    expect(calls.splice(0)).toEqual(['pending', 'new']);
  });
});
