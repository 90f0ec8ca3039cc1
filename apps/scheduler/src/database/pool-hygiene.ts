import { DataSource } from 'typeorm';

/** A mysql2 pool connection, as far as the hygiene needs it. */
interface PooledConnection {
  destroy(): void;
  stream?: { destroy(err?: Error): void };
  once(event: 'end' | 'error', listener: () => void): unknown;
  query: (...args: unknown[]) => unknown;
}

/**
 * Ends a mysql2 connection at once, failing every statement it holds or has queued (as a lost
 * connection). Its own `destroy()` only half-closes the socket, and waits for a peer a partition
 * keeps silent, with the statements still pending.
 */
export function killConnection(c: {
  destroy(): void;
  stream?: { destroy(err?: Error): void };
}): void {
  c.destroy();
  c.stream?.destroy(
    Object.assign(new Error('connection dropped: the database stopped answering (BackendGate)'), {
      code: 'PROTOCOL_CONNECTION_LOST',
    }),
  );
}

/** mysql2's pool as TypeORM's MySQL driver holds it once initialized. */
interface Pool {
  on(event: 'connection', listener: (c: PooledConnection) => void): unknown;
  _allConnections?: { toArray(): PooledConnection[] };
}

/**
 * Keeps the MySQL pool free of connections a partition left useless. A statement past its
 * timeout leaves its connection waiting for an answer that may never come (mysql2 answers the
 * next statement only after it), so that connection is destroyed. And when the database is found
 * down, every connection is destroyed: a statement sent into the partition is lost, and a
 * connection kept from before would hang the first request after the heal. The pool opens new
 * ones as they are needed.
 */
export class PoolHygiene {
  private readonly live = new Set<PooledConnection>();

  constructor(db: DataSource) {
    const pool = (db.driver as { pool?: Pool }).pool;
    if (!pool) return;
    // The connection TypeORM opened to check the credentials came before this listener.
    for (const c of pool._allConnections?.toArray() ?? []) this.track(c);
    pool.on('connection', (c) => this.track(c));
  }

  /** Destroys every connection of the pool (their statements fail as a lost connection). */
  dropAll(): number {
    const all = [...this.live];
    this.live.clear();
    for (const c of all) killConnection(c);
    return all.length;
  }

  private track(c: PooledConnection): void {
    if (this.live.has(c)) return;
    this.live.add(c);
    const forget = (): void => {
      this.live.delete(c);
    };
    c.once('end', forget);
    c.once('error', forget);
    const query = c.query.bind(c);
    c.query = (...args: unknown[]) => {
      const last = args.length - 1;
      const callback = args[last];
      if (typeof callback === 'function')
        args[last] = (err: { code?: string } | null, ...rest: unknown[]) => {
          if (err?.code === 'PROTOCOL_SEQUENCE_TIMEOUT') {
            forget();
            killConnection(c);
          }
          return (callback as (...a: unknown[]) => unknown)(err, ...rest);
        };
      return query(...args);
    };
  }
}
