import { DynamicModule, Module } from '@nestjs/common';
import { Clock, systemClock } from '@baton/time';
import { ContractErrorCode, ContractException } from '../errors/contract.exception';
import { AuthConfig, RequestVerifier } from './auth/request-auth';
import { RunLogListener, TaskHandler } from './task-handler.interface';
import { TaskWorkerController } from './task-worker.controller';
import { TaskWorkerService } from './task-worker.service';
import { WorkerMetricsController } from './worker-metrics.controller';
import { TaskStore, TaskStoreConfig } from './stores/task-store.interface';
import { createTaskStore } from './stores/task-store.factory';
import { WorkerAuthGuard } from './worker-auth.guard';
import { WorkerCallbacks } from './worker-callbacks.interface';

/** Everything a team gives to serve the contract. */
export interface TaskWorkerOptions {
  /** One handler per task type. */
  handlers: readonly TaskHandler[];
  /** How callers authenticate; `{ mode: 'none' }` only on purpose. */
  auth: AuthConfig;
  /** Where task state lives. Default: in memory. */
  store?: TaskStoreConfig | TaskStore;
  /** Hears every run start and end. */
  runLog?: RunLogListener;
  /** Reports async outcomes, heartbeats and progress to the scheduler (see CallbackClient). */
  callbacks?: WorkerCallbacks;
  /**
   * The worker's time source: task timestamps, timed starts, signature windows, waits, latencies.
   * Provided (and exported) as `Clock`, so the app's own providers can inject the same one. Pass
   * the app's clock (a ManualClock in tests); default: systemClock.
   */
  clock?: Clock;
  /** Runs taken at once, as declared at registration: shown at `GET /metrics`. */
  capacity?: number;
}

const MIN_SECRET_LENGTH = 16;

function checkAuth(auth: AuthConfig): void {
  if (auth.mode === 'token' && auth.token.length < MIN_SECRET_LENGTH) {
    throw new ContractException(
      ContractErrorCode.INTERNAL,
      `auth token must be at least ${MIN_SECRET_LENGTH} characters`,
    );
  }
  if (auth.mode === 'hmac' && auth.secret.length < MIN_SECRET_LENGTH) {
    throw new ContractException(
      ContractErrorCode.INTERNAL,
      `HMAC secret must be at least ${MIN_SECRET_LENGTH} characters`,
    );
  }
}

/**
 * Mounts the whole worker contract (docs/architecture.md) for the given handlers:
 * `POST|GET|PUT /v1/task/{task_type}`, and the worker's metrics at `GET /metrics`. The app must be created with `{ rawBody: true }` and
 * should use `ContractExceptionFilter` globally so every error carries the envelope.
 *
 * @example
 * TaskWorkerModule.register({ handlers: [new BackupHandler()], auth: { mode: 'hmac', secret } })
 */
@Module({})
export class TaskWorkerModule {
  static register(options: TaskWorkerOptions): DynamicModule {
    checkAuth(options.auth);
    return {
      module: TaskWorkerModule,
      controllers: [TaskWorkerController, WorkerMetricsController],
      providers: [
        { provide: Clock, useValue: options.clock ?? systemClock },
        {
          provide: TaskWorkerService,
          inject: [Clock],
          useFactory: (clock: Clock) =>
            new TaskWorkerService(
              options.handlers,
              createTaskStore(options.store, clock),
              options.runLog,
              options.callbacks,
              clock,
              options.capacity,
            ),
        },
        {
          provide: RequestVerifier,
          inject: [Clock],
          useFactory: (clock: Clock) => new RequestVerifier(options.auth, clock),
        },
        WorkerAuthGuard,
      ],
      exports: [TaskWorkerService, Clock],
    };
  }
}
