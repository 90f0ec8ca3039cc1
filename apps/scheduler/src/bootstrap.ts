import { ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import {
  ContractException,
  ContractErrorCode,
  ContractExceptionFilter,
  describeValidationErrors,
} from '@baton/task-contract';
import { SchedulerAppModule } from './app.module';
import { SchedulerConfig } from './config';

/** The scheduler's public API document (also written to openapi/scheduler.v1.json). */
export function schedulerDocument(app: NestFastifyApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Baton scheduler')
    .setVersion('1.0.0')
    .setDescription(
      'The TaskScheduler API: tasks (create, batch, list, lifecycle log, attempts, pause, continue, cancel, retry, rollback, change), ' +
        'task types, workers, LogDumper rules and log ingest, and the callbacks async workers report to. Every answer is `{code, message, data}`; ' +
        'error codes are those of the worker contract (openapi/worker.v1.json), code / 100 being the HTTP status.',
    )
    .addApiKey(
      {
        type: 'apiKey',
        in: 'header',
        name: 'X-Baton-Signature',
        description: 'worker-facing endpoints: signed like the worker contract',
      },
      'hmac',
    )
    .build();
  return SwaggerModule.createDocument(app, config);
}

/**
 * Builds the scheduler app: Fastify, raw bodies (signatures cover the exact bytes), strict
 * validation (unknown fields refused), the `{code, message, data}` envelope for every error, and
 * Swagger UI at /docs.
 */
export async function createSchedulerApp(
  config: SchedulerConfig,
  logger = true,
): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(
    SchedulerAppModule.forConfig(config),
    new FastifyAdapter({ bodyLimit: config.bodyLimitBytes }),
    {
      rawBody: true,
      logger: logger ? ['error', 'warn', 'log'] : ['error'],
    },
  );
  app.useGlobalPipes(
    new ValidationPipe({
      whitelist: true,
      forbidNonWhitelisted: true,
      transform: true,
      exceptionFactory: (errors) => {
        const lines = describeValidationErrors(errors);
        return new ContractException(ContractErrorCode.VALIDATION_FAILED, lines.join('; '), {
          errors: lines,
        });
      },
    }),
  );
  app.useGlobalFilters(new ContractExceptionFilter());
  app.enableShutdownHooks();
  SwaggerModule.setup('docs', app, schedulerDocument(app));
  return app;
}
