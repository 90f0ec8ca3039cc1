import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(__dirname, '..');

/** The project's own settings: what its programs read from the environment. */

/**
 * Names the documents give that are not settings, each with why: they are named so that nobody
 * sets them by mistake.
 */
const NOT_SETTINGS = new Set([
  // docs/operations.md: what Kubernetes' service links would inject into every pod (the example
  // turns them off), named so that nobody mistakes it for the scheduler's port setting.
  'BATON_SCHEDULER_PORT',
]);

const OURS = /^(BATON|WORKER|CONSOLE)_[A-Z0-9_]+$/;

function files(dir: string, keep: (path: string) => boolean): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...files(path, keep));
    else if (keep(path)) out.push(path);
  }
  return out;
}

/**
 * Every setting the code reads, with a file that reads it: `env.NAME` / `process.env.NAME`,
 * `env['NAME']`, and a setting's name as a whole string literal (`int(env, 'NAME', ...)`).
 * Tests are not the code: the names only they set are theirs.
 */
function settingsRead(): Map<string, string> {
  const code = [
    ...files(join(ROOT, 'apps'), (p) => p.endsWith('.ts')),
    ...files(join(ROOT, 'libs'), (p) => p.endsWith('.ts')),
    ...files(join(ROOT, 'bin'), (p) => p.endsWith('.ts')),
    ...files(join(ROOT, 'scripts'), (p) => /\.(mjs|sh)$/.test(p)),
  ].filter((p) => !/\.(spec|int-spec|e2e-spec)\.ts$/.test(p) && !p.includes('/test/'));
  // The test helpers' own switches (CONTRIBUTING.md names them), e.g. where processes' output goes.
  code.push(...files(join(ROOT, 'test', 'support'), (p) => p.endsWith('.ts')));
  const read = new Map<string, string>();
  const patterns = [
    /\benv\.([A-Z][A-Z0-9_]+)/g,
    /\benv\[['"]([A-Z][A-Z0-9_]+)['"]\]/g,
    /['"]([A-Z][A-Z0-9_]+)['"]/g,
    // scripts/*.sh: ${NAME:-default} and $NAME
    /\$\{?([A-Z][A-Z0-9_]+)/g,
  ];
  const texts = code.map((file) => [file, readFileSync(file, 'utf8')] as const);
  // A name the code declares is one of its constants (an injection token, say), not a setting.
  const declared = new Set(
    texts.flatMap(([, text]) =>
      [...text.matchAll(/\bconst ([A-Z][A-Z0-9_]+)\b/g)].map((m) => m[1]),
    ),
  );
  for (const [file, text] of texts)
    for (const re of patterns)
      for (const m of text.matchAll(re))
        if (OURS.test(m[1]) && !declared.has(m[1]) && !read.has(m[1]))
          read.set(m[1], relative(ROOT, file));
  return read;
}

/**
 * Every setting the documents name, in backticks: `BATON_MYSQL_HOST`, and the short forms that
 * follow a full name in the same line (`_PORT`, `_MAX_BYTES`: the full name with as many of its
 * last parts replaced).
 */
function settingsDocumented(): Map<string, string> {
  const docs = [
    ...files(join(ROOT, 'docs'), (p) => p.endsWith('.md')),
    join(ROOT, 'README.md'),
    join(ROOT, 'CONTRIBUTING.md'),
    ...files(join(ROOT, 'libs'), (p) => p.endsWith('README.md')),
    ...files(join(ROOT, 'examples'), (p) => p.endsWith('README.md')),
  ];
  const named = new Map<string, string>();
  for (const file of docs) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      let last: string | undefined;
      for (const m of line.matchAll(/`(\$?[A-Z_][A-Z0-9_]*)(=[^`]*)?`/g)) {
        let name = m[1].replace(/^\$/, '');
        if (name.startsWith('_') && last) {
          const parts = name.slice(1).split('_');
          name = [...last.split('_').slice(0, -parts.length), ...parts].join('_');
        }
        if (!OURS.test(name)) continue;
        if (!name.startsWith('_')) last = name;
        if (!named.has(name)) named.set(name, relative(ROOT, file));
      }
    }
  }
  return named;
}

/**
 * No setting is read that no document names, and no document names a setting nothing reads:
 * an operator who sets what the docs say gets what they say.
 */
describe('documented settings', () => {
  const read = settingsRead();
  const documented = settingsDocumented();

  it('finds the settings on both sides (the scan itself works)', () => {
    expect(read.get('BATON_MYSQL_CONNECT_TIMEOUT_MS')).toBe(
      'apps/scheduler/src/config/database.config.ts',
    );
    expect(documented.get('BATON_MYSQL_PORT')).toBe('docs/operations.md');
    expect(read.size).toBeGreaterThan(100);
  });

  it('documents every setting the code reads', () => {
    const missing = [...read]
      .filter(([name]) => !documented.has(name))
      .map(([n, f]) => `${n} (read in ${f})`);
    expect(missing).toEqual([]);
  });

  it('documents no setting that nothing reads', () => {
    const unread = [...documented]
      .filter(([name]) => !read.has(name) && !NOT_SETTINGS.has(name))
      .map(([n, f]) => `${n} (named in ${f})`);
    expect(unread).toEqual([]);
  });
});
