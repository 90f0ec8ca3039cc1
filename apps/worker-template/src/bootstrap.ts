import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Clock, systemClock } from '@baton/time';
import {
  ContractExceptionFilter,
  ContractFastPath,
  contractClientErrors,
  contractFrameworkErrors,
  limitJsonShape,
} from '@baton/task-contract';
import { WorkerAppModule } from './app.module';
import { WorkerConfig } from './config/worker.config';

/**
 * Builds the worker app. `rawBody` keeps the exact bytes for HMAC checks; bodies too deep or too
 * wide are refused before parsing; the filter gives routing, URL and body-parser errors the
 * envelope too. With `fastPath` (WORKER_FAST_PATH, on by
 * default) create, create_run and running are answered ahead of Fastify and Nest, the same way.
 * `clock`: the worker's one time source (WorkerAppModule).
 */
export async function createWorkerApp(
  config: WorkerConfig,
  logger = true,
  fastPath = config.fastPath ? new ContractFastPath() : undefined,
  clock: Clock = systemClock,
): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(
    WorkerAppModule.forConfig(config, clock),
    new FastifyAdapter({
      bodyLimit: config.bodyLimitBytes,
      frameworkErrors: contractFrameworkErrors,
      clientErrorHandler: contractClientErrors,
      ...(fastPath ? { serverFactory: fastPath.serverFactory } : {}),
    }),
    { rawBody: true, logger: logger ? ['error', 'warn', 'log'] : false },
  );
  app.useGlobalFilters(new ContractExceptionFilter());
  // Before the fast path takes the app's JSON parser: both paths refuse the same bodies.
  limitJsonShape(app.getHttpAdapter().getInstance());
  fastPath?.attach(app);
  app.enableShutdownHooks();
  return app;
}
