import {
  ArgumentsHost,
  CallHandler,
  ExecutionContext,
  Inject,
  Injectable,
  Logger,
  NestInterceptor,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { ContractExceptionFilter } from '@baton/task-contract';
import { Connection, createConnection } from 'mysql2/promise';
import { Observable, throwError } from 'rxjs';
import { DataSource } from 'typeorm';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { PoolHygiene, killConnection } from '../database';
import { LANES, QueueLanes } from '../queue';
import { BackendWatch, WatchedBackend, backendUnreachable } from './backend-watch';

/** Paths that answer without the shared backends: probes, metrics, the API's documents. */
const WITHOUT_BACKENDS = /^\/(health|metrics|docs)(\/|\?|-|$)/;

/** Whether a request to `url` needs the database to be answered. */
export function needsDatabase(url: string): boolean {
  return !WITHOUT_BACKENDS.test(url);
}

/**
 * The watch on this instance's shared backends (MySQL, the Redis queue), as the API and the
 * readiness probe use it. The database is pinged over a connection of its own, so a pool busy
 * with slow work does not read as an outage; the queue with a read of its size.
 */
@Injectable()
export class BackendGate extends BackendWatch implements OnModuleInit, OnApplicationShutdown {
  private ping: Connection | undefined;

  constructor(
    private readonly db: DataSource,
    private readonly lanes: QueueLanes,
    @Inject(SCHEDULER_CONFIG) private readonly settings: SchedulerConfig,
    clock: Clock,
  ) {
    super(clock, settings.backendCheck, new Logger('BackendGate'));
  }

  onModuleInit(): void {
    if (this.settings.database.type === 'mysql') {
      const pool = new PoolHygiene(this.db);
      this.onDown((backend) => {
        if (backend === 'database') pool.dropAll();
      });
      this.watch(
        'database',
        () => this.pingDatabase(),
        () => this.dropPing(),
      );
    }
    if (this.settings.queue.driver === 'redis')
      this.watch(
        'queue',
        () => this.lanes.lane(LANES[0]).size(),
        // Its request lost in a silent partition, the connection would stay dead after the heal
        // until a command's own bound ran out (2-4 s more): opened anew at once.
        () => this.lanes.reconnect(),
      );
  }

  onApplicationShutdown(): void {
    this.stop();
    this.dropPing();
  }

  /** The ping's connection, given up (a check on it timed out, or failed). */
  private dropPing(): void {
    const ping = this.ping;
    this.ping = undefined;
    // mysql2/promise wraps the connection that holds the socket.
    const core = (
      ping as unknown as { connection?: Parameters<typeof killConnection>[0] } | undefined
    )?.connection;
    if (core) killConnection(core);
  }

  private async pingDatabase(): Promise<void> {
    const db = this.settings.database;
    if (db.type !== 'mysql') return;
    try {
      const connecting = !this.ping;
      this.ping ??= await createConnection({
        host: db.host,
        port: db.port,
        user: db.user,
        password: db.password,
        database: db.database,
        // The check's own deadline bounds the wait (and tolerates a stall of this process):
        // the driver's timer, which a busy process runs late, only ends a connect left behind.
        connectTimeout: db.connectTimeoutMs ?? 5000,
        enableKeepAlive: true,
      });
      if (connecting) this.ping.on('error', () => undefined);
      await this.ping.query('SELECT 1');
    } catch (err) {
      // A connection that failed (or may still be waiting on a partition) is not used again.
      this.dropPing();
      throw err;
    }
  }

  /** Whether the fast path to `backend` should be skipped now (it is down). */
  isDown(backend: WatchedBackend): boolean {
    return this.outage(backend) !== undefined;
  }
}

/**
 * Ends an API request that needs the database with a 503 (`50301`, Retry-After) as soon as the
 * database is found down, instead of letting it wait out the partition. New requests are refused
 * before they are read (the hook in bootstrap.ts); an error that says a backend did not answer is
 * answered the same way wherever it is thrown (BackendErrorFilter).
 */
@Injectable()
export class BackendGateInterceptor implements NestInterceptor {
  constructor(private readonly gate: BackendGate) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (ctx.getType() !== 'http') return next.handle();
    const url = ctx.switchToHttp().getRequest<{ url?: string }>().url ?? '';
    if (!needsDatabase(url)) return next.handle();
    const refused = this.gate.refusal('database', true);
    if (refused) return throwError(() => refused);
    return new Observable((subscriber) => {
      const off = this.gate.onDown((backend) => {
        if (backend === 'database') subscriber.error(this.gate.refusal('database', true));
      });
      const inner = next.handle().subscribe(subscriber);
      return () => {
        off();
        inner.unsubscribe();
      };
    });
  }
}

/**
 * The envelope filter, with one rule in front: an error that says a backend did not answer (a
 * statement past its timeout, a connection lost or refused, a Redis command timeout), thrown by a
 * guard, a pipe or a handler, is a 503 (`50301`, Retry-After) naming the backend, not a 500.
 */
export class BackendErrorFilter extends ContractExceptionFilter {
  constructor(private readonly gate: BackendWatch) {
    super();
  }

  override catch(exception: unknown, host: ArgumentsHost): void {
    super.catch(
      backendUnreachable(exception)
        ? this.gate.unreachable(backendOf(exception), exception)
        : exception,
      host,
    );
  }
}

/** Which backend an unreachable error came from: a driver's error is the database's. */
function backendOf(err: unknown): WatchedBackend {
  return (err as { driverError?: unknown } | null)?.driverError !== undefined ||
    /^PROTOCOL_/.test(String((err as { code?: unknown } | null)?.code))
    ? 'database'
    : 'queue';
}
