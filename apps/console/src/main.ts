import fastifyHelmet from '@fastify/helmet';
import { DynamicModule, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { CONSOLE_CONFIG, ConsoleConfig, loadConsoleConfig } from './console.config';
import { ConsoleController } from './console.controller';

@Module({})
class ConsoleAppModule {
  static forConfig(config: ConsoleConfig): DynamicModule {
    return {
      module: ConsoleAppModule,
      controllers: [ConsoleController],
      providers: [{ provide: CONSOLE_CONFIG, useValue: config }],
    };
  }
}

async function main(): Promise<void> {
  const config = loadConsoleConfig();
  const app = await NestFactory.create<NestFastifyApplication>(
    ConsoleAppModule.forConfig(config),
    new FastifyAdapter(),
    { logger: ['error', 'warn', 'log'] },
  );
  // Security headers on every page and answer (Content-Security-Policy, frame and type options).
  await app.register(fastifyHelmet);
  app.enableShutdownHooks();
  await app.listen(config.port, config.host);
  Logger.log(`console listening on ${await app.getUrl()}`, 'Console');
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
