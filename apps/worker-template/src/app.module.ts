import { DynamicModule, Module } from '@nestjs/common';
import { Clock, systemClock } from '@baton/time';
import { CallbackClient, TaskWorkerModule } from '@baton/task-contract';
import { WorkerConfig } from './config/worker.config';
import { HealthController } from './health/health.controller';
import { FileRunLog } from './run-log/file-run-log';
import { EchoHandler } from './tasks/echo.handler';
import { FlakyHandler } from './tasks/flaky.handler';
import { RollbackHandler } from './tasks/rollback.handler';
import { SleepHandler } from './tasks/sleep.handler';

/**
 * The template worker: four sample task types behind the uniform contract. `clock` is its one
 * time source, handed to the worker library (which provides it as `Clock`), the handlers and the
 * callbacks; default: systemClock.
 */
@Module({})
export class WorkerAppModule {
  static forConfig(config: WorkerConfig, clock: Clock = systemClock): DynamicModule {
    return {
      module: WorkerAppModule,
      imports: [
        TaskWorkerModule.register({
          handlers: [
            new EchoHandler(),
            new SleepHandler(clock),
            new FlakyHandler(config.flakyFailures, clock),
            new RollbackHandler(config.rollbackDir, clock),
          ],
          clock,
          auth: config.auth,
          store: config.store,
          capacity: config.capacity,
          runLog: config.runLogPath
            ? new FileRunLog(config.runLogPath, config.workerId)
            : undefined,
          callbacks:
            config.schedulerUrl && config.callbacks
              ? new CallbackClient({ schedulerUrl: config.schedulerUrl, auth: config.auth, clock })
              : undefined,
        }),
      ],
      controllers: [HealthController],
    };
  }
}
