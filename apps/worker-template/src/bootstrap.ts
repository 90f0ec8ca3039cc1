import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { ContractExceptionFilter, ContractFastPath } from '@baton/task-contract';
import { WorkerAppModule } from './app.module';
import { WorkerConfig } from './config/worker.config';

/**
 * Builds the worker app. `rawBody` keeps the exact bytes for HMAC checks; the filter gives
 * routing and body-parser errors the envelope too. With `fastPath` (WORKER_FAST_PATH, on by
 * default) create, create_run and running are answered ahead of Fastify and Nest, the same way.
 */
export async function createWorkerApp(
  config: WorkerConfig,
  logger = true,
  fastPath = config.fastPath ? new ContractFastPath() : undefined,
): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(
    WorkerAppModule.forConfig(config),
    new FastifyAdapter({
      bodyLimit: config.bodyLimitBytes,
      ...(fastPath ? { serverFactory: fastPath.serverFactory } : {}),
    }),
    { rawBody: true, logger: logger ? ['error', 'warn', 'log'] : false },
  );
  app.useGlobalFilters(new ContractExceptionFilter());
  fastPath?.attach(app);
  app.enableShutdownHooks();
  return app;
}
