import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { ContractExceptionFilter } from '@baton/task-contract';
import { WorkerAppModule } from './app.module';
import { WorkerConfig } from './config/worker.config';

/**
 * Builds the worker app. `rawBody` keeps the exact bytes for HMAC checks; the filter gives
 * routing and body-parser errors the envelope too.
 */
export async function createWorkerApp(
  config: WorkerConfig,
  logger = true,
): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(
    WorkerAppModule.forConfig(config),
    new FastifyAdapter({ bodyLimit: config.bodyLimitBytes }),
    { rawBody: true, logger: logger ? ['error', 'warn', 'log'] : false },
  );
  app.useGlobalFilters(new ContractExceptionFilter());
  app.enableShutdownHooks();
  return app;
}
