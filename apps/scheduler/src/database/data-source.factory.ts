import { DataSource } from 'typeorm';
import { LogOffsetEntity } from '../logdumper/log-offset.entity';
import { LogRuleEntity } from '../logdumper/log-rule.entity';
import { IdempotencyRecordEntity } from '../tasks/idempotency-record.entity';
import { TaskAttemptEntity } from '../tasks/task-attempt.entity';
import { TaskEventEntity } from '../tasks/task-event.entity';
import { TaskLabelEntity } from '../tasks/task-label.entity';
import { TaskEntity } from '../tasks/task.entity';
import { TaskTypeEntity } from '../task-types/task-type.entity';
import { WorkerEntity } from '../workers/worker.entity';
import { DatabaseConfig } from './database.config';
import { Init1763800000000 } from './migrations/1763800000000-Init';
import { TaskTypeRateLimit1763900000000 } from './migrations/1763900000000-TaskTypeRateLimit';
import { Timers1764000000000 } from './migrations/1764000000000-Timers';
import { ProducerMemberEntity, TimerEntity } from '../producer/timer.entity';
import { LogDumper1764100000000 } from './migrations/1764100000000-LogDumper';

export const ENTITIES = [
  TaskEntity,
  TaskEventEntity,
  TaskLabelEntity,
  TaskAttemptEntity,
  TaskTypeEntity,
  WorkerEntity,
  IdempotencyRecordEntity,
  TimerEntity,
  ProducerMemberEntity,
  LogRuleEntity,
  LogOffsetEntity,
];
export const MIGRATIONS = [
  Init1763800000000,
  TaskTypeRateLimit1763900000000,
  Timers1764000000000,
  LogDumper1764100000000,
];

/**
 * Builds (does not open) the TypeORM data source. Never `synchronize`: the schema comes only from
 * the migrations, which run as an explicit step (`runMigrations`).
 */
export function createDataSource(config: DatabaseConfig): DataSource {
  const common = {
    entities: ENTITIES,
    migrations: MIGRATIONS,
    synchronize: false,
    migrationsRun: false,
    logging: false,
  } as const;
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
    supportBigNumbers: true,
    bigNumberStrings: false,
    charset: 'utf8mb4',
  });
}
