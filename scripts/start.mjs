// Runs Baton on the embedded defaults: scheduler, console and the template worker, each its own
// process, output prefixed by name. Ctrl-C (or any one dying) stops all three.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';

const root = new URL('..', import.meta.url).pathname;
for (const entry of ['scheduler', 'console', 'worker-template']) {
  if (!existsSync(`${root}dist/apps/${entry}/src/main.js`)) {
    console.error(
      `dist/apps/${entry} is missing: run \`npm run build\` (npm start does it for you)`,
    );
    process.exit(1);
  }
}
// Where the scheduler's database, the worker's task store and the demo's files go.
const dataDir = process.env.BATON_DATA_DIR ?? '.data';
mkdirSync(dataDir.startsWith('/') ? dataDir : `${root}${dataDir}`, { recursive: true });

// One secret per run, shared by scheduler and worker: nothing hard-coded, nothing to configure.
const secret = process.env.BATON_AUTH_SECRET ?? randomBytes(24).toString('hex');
const shared = {
  ...process.env,
  BATON_AUTH_MODE: process.env.BATON_AUTH_MODE ?? 'hmac',
  BATON_AUTH_SECRET: secret,
  // Lines for a person at a terminal; a deployment keeps the default, one JSON object a line.
  BATON_LOG_FORMAT: process.env.BATON_LOG_FORMAT ?? 'pretty',
};
const ports = {
  scheduler: process.env.SCHEDULER_PORT ?? '3000',
  console: process.env.CONSOLE_PORT ?? '3001',
  worker: process.env.WORKER_PORT ?? '3100',
};
const apps = [
  [
    'scheduler',
    'dist/apps/scheduler/src/main.js',
    {
      SCHEDULER_PORT: ports.scheduler,
      BATON_DB_PATH: process.env.BATON_DB_PATH ?? `${dataDir}/baton.sqlite`,
    },
  ],
  [
    'console',
    'dist/apps/console/src/main.js',
    {
      CONSOLE_PORT: ports.console,
      // The console passes its pages' /api/* calls to the scheduler's public API.
      BATON_SCHEDULER_URL: `http://127.0.0.1:${ports.scheduler}`,
    },
  ],
  [
    'worker',
    'dist/apps/worker-template/src/main.js',
    {
      WORKER_PORT: ports.worker,
      // The worker registers with the scheduler and reports async outcomes to it.
      BATON_SCHEDULER_URL: `http://127.0.0.1:${ports.scheduler}`,
      WORKER_STORE: process.env.WORKER_STORE ?? 'sqlite',
      WORKER_STORE_PATH: process.env.WORKER_STORE_PATH ?? `${dataDir}/worker-tasks.sqlite`,
      WORKER_ROLLBACK_DIR: process.env.WORKER_ROLLBACK_DIR ?? `${dataDir}/rollback`,
    },
  ],
];

// The first admin key, when this start made one: printed again last, set apart from the start-up
// lines (among some 160 of them it is easy to miss), once the output has been quiet for a moment.
const FIRST_KEY = /first admin API key, shown once[^:]*: (baton_\S+)/;
let firstKey;
let keyBoxTimer;
let keyBoxShown = false;
function keyBoxAfterQuiet() {
  if (keyBoxShown) return;
  clearTimeout(keyBoxTimer);
  keyBoxTimer = setTimeout(() => {
    keyBoxShown = true;
    const rule = '='.repeat(78);
    process.stdout.write(
      [
        '',
        rule,
        '  The first admin API key (shown this once: keep it; make others with POST /v1/api-keys):',
        '',
        `    ${firstKey}`,
        '',
        `  Console: http://127.0.0.1:${ports.console} (paste the key) · API docs: http://127.0.0.1:${ports.scheduler}/docs`,
        rule,
        '',
      ].join('\n'),
    );
  }, 1500);
  keyBoxTimer.unref();
}

const children = [];
let stopping = false;
function stopAll(code) {
  if (stopping) return;
  stopping = true;
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  setTimeout(() => process.exit(code), 1500).unref();
}

for (const [name, file, env] of apps) {
  // The scheduler allocates mostly short-lived objects per task: a larger young generation spares
  // it garbage collection, and a bounded old-generation growth keeps its RSS near what is live
  // (docs/operations.md).
  const flags =
    name === 'scheduler' ? ['--max-semi-space-size=32', '--heap-growing-percent=50'] : [];
  const child = spawn(process.execPath, [...flags, file], {
    cwd: root,
    env: { ...shared, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const prefix = `[${name}] `.padEnd(12);
  for (const stream of [child.stdout, child.stderr]) {
    let buffered = '';
    stream.on('data', (chunk) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop();
      for (const line of lines) {
        process.stdout.write(prefix + line + '\n');
        const key = name === 'scheduler' && FIRST_KEY.exec(line)?.[1];
        if (key) firstKey = key;
        if (firstKey) keyBoxAfterQuiet();
      }
    });
  }
  child.on('exit', (code, signal) => {
    if (!stopping) {
      console.error(`${prefix}exited (${signal ?? code}); stopping the others`);
      stopAll(code ?? 1);
    }
  });
  children.push(child);
}
console.log(
  `Baton: scheduler http://127.0.0.1:${ports.scheduler}/docs · console http://127.0.0.1:${ports.console} · worker http://127.0.0.1:${ports.worker}`,
);
process.on('SIGINT', () => stopAll(0));
process.on('SIGTERM', () => stopAll(0));
