import { Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { Clock, systemClock } from '@baton/time';
import { ContractException } from '../errors/contract.exception';

const LATENCY = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** How a contract call ended: answered, refused with a contract error, or failed otherwise. */
export type WorkerCallResult = 'ok' | 'refused' | 'error';

/**
 * A worker's own metrics, shown at its `GET /metrics` in the Prometheus text format: the runs
 * going on by task type (`baton_worker_running_tasks`), the capacity it declared
 * (`baton_worker_capacity`), every contract call by action and result with its latency
 * (`baton_worker_request_duration_seconds`), and the process's own (CPU, memory, event loop).
 * Per process: sum them over a worker's replicas.
 */
export class WorkerMetrics {
  readonly registry = new Registry();
  private readonly calls: Histogram;
  /** Series of `calls` by action and outcome: observed without hashing the labels each time. */
  private readonly series = new Map<string, { observe(value: number): void }>();

  constructor(
    running: () => ReadonlyMap<string, number>,
    capacity?: number,
    /** Times the calls (its monotonic clock). */
    private readonly clock: Clock = systemClock,
  ) {
    this.calls = new Histogram({
      name: 'baton_worker_request_duration_seconds',
      help: 'Contract calls this worker answered, by action (create, create_run, query, status, running, pause, ...) and result (ok, refused, error), with their latency. Per process.',
      labelNames: ['action', 'outcome'],
      buckets: LATENCY,
      registers: [this.registry],
    });
    new Gauge({
      name: 'baton_worker_running_tasks',
      help: 'Runs going on in this worker process, by task type.',
      labelNames: ['task_type'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [task_type, n] of running()) this.set({ task_type }, n);
      },
    });
    if (capacity !== undefined)
      new Gauge({
        name: 'baton_worker_capacity',
        help: 'Runs this worker process takes at once, as it declared when it registered.',
        registers: [this.registry],
      }).set(capacity);
    collectDefaultMetrics({ register: this.registry });
  }

  /** Times one call: `work` as it is, with its latency and result observed once it settles. */
  async time<T>(action: string, work: () => Promise<T>): Promise<T> {
    const started = this.clock.monotonic();
    let outcome: WorkerCallResult = 'ok';
    try {
      return await work();
    } catch (err) {
      outcome = err instanceof ContractException ? 'refused' : 'error';
      throw err;
    } finally {
      const key = `${action}\u0001${outcome}`;
      let series = this.series.get(key);
      if (!series) this.series.set(key, (series = this.calls.labels({ action, outcome })));
      series.observe((this.clock.monotonic() - started) / 1000);
    }
  }

  scrape(): Promise<string> {
    return this.registry.metrics();
  }
}
