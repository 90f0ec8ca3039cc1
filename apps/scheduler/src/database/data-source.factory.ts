import { DataSource, EntitySchema } from 'typeorm';
import { DatabaseConfig } from '../config';
import { Init1763800000000 } from './migrations/1763800000000-Init';
import { TaskTypeRateLimit1763900000000 } from './migrations/1763900000000-TaskTypeRateLimit';
import { Timers1764000000000 } from './migrations/1764000000000-Timers';
import { LogDumper1764100000000 } from './migrations/1764100000000-LogDumper';
import { TaskChanges1764200000000 } from './migrations/1764200000000-TaskChanges';
import { AttemptMoves1764300000000 } from './migrations/1764300000000-AttemptMoves';
import { TenantLimits1764400000000 } from './migrations/1764400000000-TenantLimits';
import { Retention1764500000000 } from './migrations/1764500000000-Retention';
import { ExactIdentifiers1764600000000 } from './migrations/1764600000000-ExactIdentifiers';
import { ApiKeys1764700000000 } from './migrations/1764700000000-ApiKeys';
import { Audit1764800000000 } from './migrations/1764800000000-Audit';
import { LogRuleTenant1764900000000 } from './migrations/1764900000000-LogRuleTenant';
import { Webhooks1765000000000 } from './migrations/1765000000000-Webhooks';
import { Topologies1765100000000 } from './migrations/1765100000000-Topologies';
import { TaskCounts1765200000000 } from './migrations/1765200000000-TaskCounts';
import { FleetControl1765300000000 } from './migrations/1765300000000-FleetControl';
import { TaskListIndexes1765400000000 } from './migrations/1765400000000-TaskListIndexes';
import { TaskHistory1765500000000 } from './migrations/1765500000000-TaskHistory';
import { TaskCreatedIndex1765800000000 } from './migrations/1765800000000-TaskCreatedIndex';
import { TopologyHistory1765900000000 } from './migrations/1765900000000-TopologyHistory';
import { TopologyRunDeadline1766000000000 } from './migrations/1766000000000-TopologyRunDeadline';
import { WaitsToldOnce1766100000000 } from './migrations/1766100000000-WaitsToldOnce';
import { WorkerContractVersion1766200000000 } from './migrations/1766200000000-WorkerContractVersion';
import { AttemptLogs1766300000000 } from './migrations/1766300000000-AttemptLogs';
import { TypeWorkerLost1766400000000 } from './migrations/1766400000000-TypeWorkerLost';
import { TypeSchemas1766500000000 } from './migrations/1766500000000-TypeSchemas';
import { FinishCountsByOutcome1766600000000 } from './migrations/1766600000000-FinishCountsByOutcome';
import { AttemptLogChunks1766700000000 } from './migrations/1766700000000-AttemptLogChunks';
import { WebhookClaims1766800000000 } from './migrations/1766800000000-WebhookClaims';

/** An entity as TypeORM takes it: a decorated class or a schema. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export type EntityClass = Function | EntitySchema;

/** The schema's history, oldest first: the only source of tables (never `synchronize`). */
export const MIGRATIONS = [
  Init1763800000000,
  TaskTypeRateLimit1763900000000,
  Timers1764000000000,
  LogDumper1764100000000,
  TaskChanges1764200000000,
  AttemptMoves1764300000000,
  TenantLimits1764400000000,
  Retention1764500000000,
  ExactIdentifiers1764600000000,
  ApiKeys1764700000000,
  Audit1764800000000,
  LogRuleTenant1764900000000,
  Webhooks1765000000000,
  Topologies1765100000000,
  TaskCounts1765200000000,
  FleetControl1765300000000,
  TaskListIndexes1765400000000,
  TaskHistory1765500000000,
  TaskCreatedIndex1765800000000,
  TopologyHistory1765900000000,
  TopologyRunDeadline1766000000000,
  WaitsToldOnce1766100000000,
  WorkerContractVersion1766200000000,
  AttemptLogs1766300000000,
  TypeWorkerLost1766400000000,
  TypeSchemas1766500000000,
  FinishCountsByOutcome1766600000000,
  AttemptLogChunks1766700000000,
  WebhookClaims1766800000000,
];

/**
 * Builds (does not open) the TypeORM data source over the given entities (the composition root
 * gathers them from the modules that own them: `apps/scheduler/src/entities.ts`). Never `synchronize`: the schema comes only from
 * the migrations, which run as an explicit step (`runMigrations`).
 */
export function createDataSource(
  config: DatabaseConfig,
  entities: readonly EntityClass[],
): DataSource {
  const common = {
    entities: [...entities],
    migrations: MIGRATIONS,
    synchronize: false,
    migrationsRun: false,
    logging: false,
  };
  if (config.type === 'sqlite') {
    return new DataSource({
      ...common,
      type: 'better-sqlite3',
      database: config.path,
      // WAL lets readers (API) go on while the runner writes; NORMAL sync is durable in WAL mode
      // against process crashes, which is what the embedded default promises.
      prepareDatabase: (db: { pragma: (s: string) => unknown }) => {
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = NORMAL');
        db.pragma('busy_timeout = 5000');
      },
    });
  }
  return new DataSource({
    ...common,
    type: 'mysql',
    host: config.host,
    port: config.port,
    username: config.user,
    password: config.password,
    database: config.database,
    poolSize: config.poolSize,
    // Every wait on the server has a bound: the connection, each statement, and TCP keep-alive
    // probes that find a peer gone silent (a partition closes nothing) long before TCP would.
    connectTimeout: config.connectTimeoutMs ?? 5000,
    enableQueryTimeout: true,
    maxQueryExecutionTime: config.queryTimeoutMs ?? 30_000,
    extra: { enableKeepAlive: true, keepAliveInitialDelay: 10_000 },
    supportBigNumbers: true,
    bigNumberStrings: false,
    charset: 'utf8mb4',
  });
}
