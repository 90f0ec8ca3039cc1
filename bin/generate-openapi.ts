/**
 * Writes the OpenAPI documents of openapi/ from the code, or with --check, fails when the files
 * on disk differ from what the code generates (CI's drift check).
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskWorkerModule, buildWorkerOpenApi } from '@baton/task-contract';
import { createSchedulerApp, schedulerDocument } from '../apps/scheduler/src/bootstrap';
import { loadSchedulerConfig } from '../apps/scheduler/src/config';

const ROOT = join(__dirname, '..', '..');
/** The scheduler client's types, generated from the scheduler's document. */
const CLIENT_TYPES = 'libs/scheduler-client/src/generated/scheduler.v1.ts';

/** TypeScript types of a document, by openapi-typescript (its CLI: the package is ESM only). */
function typesOf(doc: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'baton-openapi-'));
  try {
    const file = join(dir, 'doc.json');
    writeFileSync(file, JSON.stringify(doc));
    const cli = join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
    return execFileSync(process.execPath, [cli, file, '--default-non-nullable', 'false'], {
      encoding: 'utf8',
      cwd: ROOT,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

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
  const files: [string, string][] = Object.entries(documents).map(([name, doc]) => [
    `openapi/${name}`,
    `${JSON.stringify(doc, null, 2)}\n`,
  ]);
  files.push([CLIENT_TYPES, typesOf(documents['scheduler.v1.json'])]);
  let stale = 0;
  for (const [name, text] of files) {
    const path = join(ROOT, name);
    if (check) {
      let current = '';
      try {
        current = readFileSync(path, 'utf8');
      } catch {
        // missing counts as stale
      }
      if (current !== text) {
        stale++;
        console.error(`${name} is stale: run \`npm run openapi\` and commit the result`);
      } else {
        console.log(`${name} is up to date`);
      }
    } else {
      mkdirSync(join(path, '..'), { recursive: true });
      writeFileSync(path, text);
      console.log(`wrote ${name}`);
    }
  }
  process.exit(stale > 0 ? 1 : 0);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
