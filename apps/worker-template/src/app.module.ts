import { DynamicModule, Module } from '@nestjs/common';
import { CallbackClient, TaskWorkerModule } from '@baton/task-contract';
import { WorkerConfig } from './config/worker.config';
import { HealthController } from './health/health.controller';
import { FileRunLog } from './run-log/file-run-log';
import { EchoHandler } from './tasks/echo.handler';
import { FlakyHandler } from './tasks/flaky.handler';
import { RollbackHandler } from './tasks/rollback.handler';
import { SleepHandler } from './tasks/sleep.handler';

/** The template worker: four sample task types behind the uniform contract. */
@Module({})
export class WorkerAppModule {
  static forConfig(config: WorkerConfig): DynamicModule {
    return {
      module: WorkerAppModule,
      imports: [
        TaskWorkerModule.register({
          handlers: [
            new EchoHandler(),
            new SleepHandler(),
            new FlakyHandler(config.flakyFailures),
            new RollbackHandler(config.rollbackDir),
          ],
          auth: config.auth,
          store: config.store,
          capacity: config.capacity,
          runLog: config.runLogPath
            ? new FileRunLog(config.runLogPath, config.workerId)
            : undefined,
          callbacks:
            config.schedulerUrl && config.callbacks
              ? new CallbackClient({ schedulerUrl: config.schedulerUrl, auth: config.auth })
              : undefined,
        }),
      ],
      controllers: [HealthController],
    };
  }
}
