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
import {
  TaskWorkerModule,
  WORKER_CONTRACT_CHANGELOG,
  CheckFingerprints,
  breakingChanges,
  checkChangeProblems,
  kitFingerprints,
  buildWorkerOpenApi,
  versionProblems,
} from '@baton/task-contract';
import { createSchedulerApp, schedulerDocument } from '../apps/scheduler/src/bootstrap';
import { loadSchedulerConfig } from '../apps/scheduler/src/config';

const ROOT = join(__dirname, '..', '..');
/** The scheduler client's types, generated from the scheduler's document. */
const CLIENT_TYPES = 'libs/scheduler-client/src/generated/scheduler.v1.ts';
/** What each conformance kit check tests (a digest of its code) as of the documents on disk. */
const CHECK_FINGERPRINTS = 'openapi/worker-contract.checks.json';

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

/**
 * Why the worker document may not replace the one on disk: a breaking change (a worker or
 * scheduler built against the old one would fail) without a new major version and a changelog
 * entry that says so. A missing or unreadable file has nothing to compare with.
 */
function workerDocProblems(next: unknown): string[] {
  let current: unknown;
  try {
    current = JSON.parse(readFileSync(join(ROOT, 'openapi/worker.v1.json'), 'utf8'));
  } catch {
    return [];
  }
  const problems = versionProblems(current, next);
  if (
    problems.length === 0 &&
    breakingChanges(current, next).length > 0 &&
    !WORKER_CONTRACT_CHANGELOG[0].breaking
  )
    problems.push(
      `the changelog entry of ${WORKER_CONTRACT_CHANGELOG[0].version} must say breaking`,
    );
  return problems;
}

/** What the kit's checks did when the documents were last written (none before the first). */
function recordedFingerprints(): CheckFingerprints | undefined {
  try {
    const file = JSON.parse(readFileSync(join(ROOT, CHECK_FINGERPRINTS), 'utf8')) as {
      checks?: CheckFingerprints;
    };
    return file.checks;
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const documents: Record<string, unknown> = {
    'worker.v1.json': await workerDocument(),
    'scheduler.v1.json': await schedulerDoc(),
  };
  const fingerprints = kitFingerprints();
  const refused = [
    ...workerDocProblems(documents['worker.v1.json']),
    ...checkChangeProblems(recordedFingerprints(), fingerprints, WORKER_CONTRACT_CHANGELOG),
  ];
  if (refused.length > 0) {
    console.error(
      `openapi/worker.v1.json: the worker contract changed without a version or changelog line that says so:`,
    );
    for (const line of refused) console.error(line);
    process.exit(1);
  }
  const files: [string, string][] = Object.entries(documents).map(([name, doc]) => [
    `openapi/${name}`,
    `${JSON.stringify(doc, null, 2)}\n`,
  ]);
  files.push([CLIENT_TYPES, typesOf(documents['scheduler.v1.json'])]);
  files.push([
    CHECK_FINGERPRINTS,
    `${JSON.stringify({ version: WORKER_CONTRACT_CHANGELOG[0].version, checks: fingerprints }, null, 2)}\n`,
  ]);
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
