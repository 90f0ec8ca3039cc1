/**
 * Writes the OpenAPI documents of openapi/ from the code, or with --check, fails when the files
 * on disk differ from what the code generates (CI's drift check).
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TaskWorkerModule, buildWorkerOpenApi } from '@baton/task-contract';
import { createSchedulerApp, schedulerDocument } from '../apps/scheduler/src/bootstrap';
import { loadSchedulerConfig } from '../apps/scheduler/src/config';

const OUT_DIR = join(__dirname, '..', '..', 'openapi');

@Module({ imports: [TaskWorkerModule.register({ handlers: [], auth: { mode: 'none' } })] })
class WorkerContractDocModule {}

async function workerDocument(): Promise<unknown> {
  const app = await NestFactory.create(WorkerContractDocModule, new FastifyAdapter(), {
    logger: false,
  });
  try {
    return buildWorkerOpenApi(app);
  } finally {
    await app.close();
  }
}

/** The scheduler's document, from the real app on a throwaway in-memory database (nothing listens). */
async function schedulerDoc(): Promise<unknown> {
  const config = loadSchedulerConfig({
    BATON_DB: 'sqlite',
    BATON_DB_PATH: ':memory:',
    BATON_AUTH_MODE: 'none',
    BATON_INSTANCE_ID: 'openapi',
  });
  const app = await createSchedulerApp(config, false);
  try {
    return schedulerDocument(app);
  } finally {
    await app.close();
  }
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const documents: Record<string, unknown> = {
    'worker.v1.json': await workerDocument(),
    'scheduler.v1.json': await schedulerDoc(),
  };
  let stale = 0;
  for (const [name, doc] of Object.entries(documents)) {
    const path = join(OUT_DIR, name);
    const text = `${JSON.stringify(doc, null, 2)}\n`;
    if (check) {
      let current = '';
      try {
        current = readFileSync(path, 'utf8');
      } catch {
        // missing counts as stale
      }
      if (current !== text) {
        stale++;
        console.error(`openapi/${name} is stale: run \`npm run openapi\` and commit the result`);
      } else {
        console.log(`openapi/${name} is up to date`);
      }
    } else {
      mkdirSync(OUT_DIR, { recursive: true });
      writeFileSync(path, text);
      console.log(`wrote openapi/${name}`);
    }
  }
  process.exit(stale > 0 ? 1 : 0);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
