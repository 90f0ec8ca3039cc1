import fastifyHelmet from '@fastify/helmet';
import { DynamicModule, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { contractClientErrors } from '@baton/task-contract';
import { registerApiProxy } from './api-proxy';
import { CONSOLE_CONFIG, ConsoleConfig, loadConsoleConfig } from './console.config';
import { ConsoleController } from './console.controller';
import { OidcSessions } from './oidc-sessions';
import { registerUiPages } from './ui-pages';

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
    new FastifyAdapter({ clientErrorHandler: contractClientErrors }),
    { logger: ['error', 'warn', 'log'] },
  );
  // Security headers on every page and answer (Content-Security-Policy: scripts and styles from
  // the console itself only; frame and type options). The pages use relative addresses only, so
  // they need no upgrade to https: a console served over plain http (npm start) keeps working.
  await app.register(fastifyHelmet, {
    contentSecurityPolicy: { directives: { 'upgrade-insecure-requests': null } },
  });
  const fastify = app.getHttpAdapter().getInstance();
  const sessions = config.oidc ? new OidcSessions(config.oidc) : undefined;
  // What the sign-in page offers: single sign-on when set up, an API key always.
  fastify.get('/auth/config', (_req, reply) => reply.send({ oidc: sessions !== undefined }));
  sessions?.register(fastify);
  registerApiProxy(fastify, config.schedulerUrl, config.apiTimeoutMs, sessions);
  if (!registerUiPages(fastify, config.uiDir)) {
    Logger.warn(
      `no built pages in ${config.uiDir}: run \`npm run build:console\` (npm start does it)`,
      'Console',
    );
  }
  app.enableShutdownHooks();
  await app.listen(config.port, config.host);
  Logger.log(`console listening on ${await app.getUrl()} (API: ${config.schedulerUrl})`, 'Console');
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
