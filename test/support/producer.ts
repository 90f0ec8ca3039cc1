import { createConnection } from 'mysql2/promise';
import { Api, Backend, startScheduler, startTemplateWorker } from './baton';
import { RunningProcess, eventually } from './processes';

/** The id of the timer of this name, straight from the database (undefined when there is none). */
export async function timerIdByName(database: string, name: string): Promise<string | undefined> {
  const c = await createConnection({ host: '127.0.0.1', user: 'root', password: '', database });
  try {
    const [rows] = await c.query('SELECT timer_id FROM baton_timer WHERE name = ?', [name]);
    return (rows as { timer_id: string }[])[0]?.timer_id;
  } finally {
    await c.end();
  }
}

/**
 * Fires of a timer straight from the database: slot (from the unique key), creation time, and the
 * instance that wrote it (the actor `producer:<instance>` of the task's creation event).
 */
export async function fireRows(
  database: string,
  timerId: string,
): Promise<{ slot: number; createdAt: number; firedBy: string }[]> {
  const c = await createConnection({ host: '127.0.0.1', user: 'root', password: '', database });
  try {
    const [rows] = await c.query(
      `SELECT t.idempotency_key AS k, t.created_at AS c, e.actor AS a
         FROM baton_task t
         JOIN baton_task_event e ON e.task_id = t.task_id AND e.from_status IS NULL
        WHERE t.idempotency_key LIKE ?`,
      [`timer:${timerId}:%`],
    );
    return (rows as { k: string; c: string | number; a: string }[])
      .map((r) => ({
        slot: Number(r.k.split(':')[2]),
        createdAt: Number(r.c),
        firedBy: r.a.replace(/^producer:/, ''),
      }))
      .sort((a, b) => a.slot - b.slot);
  } finally {
    await c.end();
  }
}

/** Slots from the first to the last, each exactly once: the gaps (missing slots) listed. */
export function gaps(slots: number[], stepMs: number): number[] {
  const missing: number[] = [];
  for (let i = 1; i < slots.length; i++)
    for (let s = slots[i - 1] + stepMs; s < slots[i]; s += stepMs) missing.push(s);
  return missing;
}

/** A timer definition firing every second, catching up on every slot it missed in a failover. */
export const everySecond = (name: string) => ({
  name,
  schedule: { kind: 'cron', cron: '*/1 * * * * *' },
  task: { create_info: { task_type: 'demo.echo', task_name: name }, params: {} },
  misfire_policy: 'fire_all',
  misfire_grace_ms: 60_000,
});

export interface ProducerStatus {
  active: boolean;
  members: string[];
  owned_timers: string[];
}

/**
 * Scheduler processes on one backend, named by their instance id, and one template worker that
 * registers with the first of them: the Producer's view of a cluster whose members are killed.
 */
export class SchedulerGroup {
  private readonly procs = new Map<string, RunningProcess>();
  private worker: RunningProcess | undefined;

  constructor(
    private readonly backend: Backend,
    /** The template worker's run log. */
    private readonly runLog: string,
  ) {}

  get database(): string {
    return this.backend.env.BATON_MYSQL_DATABASE as string;
  }

  /** The ids of the instances still running. */
  ids(): string[] {
    return [...this.procs.keys()];
  }

  process(id: string): RunningProcess {
    const p = this.procs.get(id);
    if (!p) throw new Error(`no scheduler ${id} in this group`);
    return p;
  }

  api(id: string): Api {
    return new Api(this.process(id).url);
  }

  /** Starts instance `id` (and the worker with the first one). */
  async start(id: string, extra: NodeJS.ProcessEnv = {}): Promise<Api> {
    const p = await startScheduler(this.backend, { BATON_INSTANCE_ID: id, ...extra });
    this.procs.set(id, p);
    if (!this.worker) {
      this.worker = await startTemplateWorker(`${id}-w1`, p.url, this.runLog);
      await new Api(p.url).waitForWorkers(1);
    }
    return new Api(p.url);
  }

  /** Forgets an instance that died by itself (a crash point). */
  forget(id: string): void {
    this.procs.delete(id);
  }

  async kill9(id: string): Promise<void> {
    await this.process(id).kill9();
    this.procs.delete(id);
  }

  async status(id: string): Promise<ProducerStatus> {
    return (await this.api(id).call<ProducerStatus>('GET', '/v1/producer')).data;
  }

  /** Distributed mode: waits until every live instance sees every live instance as a member. */
  async membersAgree(timeoutMs = 15_000): Promise<void> {
    const all = this.ids().sort().join(',');
    await eventually(
      async () => {
        const views = await Promise.all(this.ids().map((id) => this.status(id)));
        return views.every((v) => v.members.join(',') === all) ? true : undefined;
      },
      timeoutMs,
      `every instance seeing the members ${all}`,
    );
  }

  /** Every timer of `timerIds` with its one owner, once each has exactly one among the live instances. */
  owners(timerIds: string[], timeoutMs = 20_000): Promise<Map<string, string>> {
    return eventually(
      async () => {
        const owned = await Promise.all(
          this.ids().map(async (id) => ({ id, timers: (await this.status(id)).owned_timers })),
        );
        const out = new Map<string, string>();
        for (const timerId of timerIds) {
          const holders = owned.filter((o) => o.timers.includes(timerId));
          if (holders.length !== 1) return undefined;
          out.set(timerId, holders[0].id);
        }
        return out;
      },
      timeoutMs,
      `one owner of each of ${timerIds.join(', ')}`,
    );
  }

  /**
   * Every timer instance `id` owns at any look, looked at every 200 ms until `stop()` (which
   * looks once more): ownership moves when a member's lease lapses on a starved box and comes
   * back when it renews, so two snapshots can miss a timer the instance owned in between.
   */
  watchOwned(id: string): { owned: Set<string>; stop(): Promise<Set<string>> } {
    const owned = new Set<string>();
    let stopping = false;
    const look = async (): Promise<void> => {
      try {
        for (const t of (await this.status(id)).owned_timers) owned.add(t);
      } catch {
        // Not answering this time (starting, stopping): the next look counts.
      }
    };
    const loop = (async () => {
      while (!stopping) {
        await look();
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    return {
      owned,
      stop: async () => {
        stopping = true;
        await loop;
        await look();
        return owned;
      },
    };
  }

  /** The instance that fires `timerId` now (the one owner). */
  async ownerOf(timerId: string): Promise<string> {
    return (await this.owners([timerId])).get(timerId) as string;
  }

  /**
   * Kills the owner of `timerId`, and reports how long until the next fire was written, and by
   * which instance.
   */
  async killOwner(
    timerId: string,
  ): Promise<{ victim: string; failoverMs: number; takenBy: string }> {
    const victim = await this.ownerOf(timerId);
    const before = (await fireRows(this.database, timerId)).length;
    const killedAt = Date.now();
    await this.kill9(victim);
    const firstAfter = await eventually(
      async () => {
        const rows = await fireRows(this.database, timerId);
        const next = rows.filter((r) => r.createdAt > killedAt);
        return rows.length > before && next.length > 0
          ? next.reduce((a, b) => (b.createdAt < a.createdAt ? b : a))
          : undefined;
      },
      // Generous: the takeover waits for the dead owner's lease or session to lapse, and on a box
      // loaded by the other lanes every step of it runs late.
      120_000,
      'a fire after the owner was killed',
    );
    return { victim, failoverMs: firstAfter.createdAt - killedAt, takenBy: firstAfter.firedBy };
  }

  /** Stops every instance and the worker (SIGTERM). */
  async stop(): Promise<void> {
    await Promise.all([...this.procs.values()].map((p) => p.stop()));
    this.procs.clear();
    await this.worker?.stop();
    this.worker = undefined;
  }
}
