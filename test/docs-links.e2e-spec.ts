import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ROOT } from './support/processes';

/** The product's own documentation: what a user's clone carries. */
function documents(): string[] {
  const docs = join(ROOT, 'docs');
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : name.endsWith('.md') ? [path] : [];
    });
  return [
    join(ROOT, 'README.md'),
    join(ROOT, 'CONTRIBUTING.md'),
    join(ROOT, 'libs', 'locks', 'README.md'),
    ...(existsSync(docs) ? walk(docs) : []),
  ];
}

/** Markdown links `[text](target)` outside code, with their line numbers. */
function links(text: string): { target: string; line: number }[] {
  const found: { target: string; line: number }[] = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (line.trimStart().startsWith('```')) fenced = !fenced;
    if (fenced) return;
    const prose = line.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g)) found.push({ target: m[1], line: i + 1 });
  });
  return found;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  return new Set(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => /^#{1,6} /.test(l))
      .map((l) => slug(l.replace(/^#+ /, ''))),
  );
}

/** What is wrong with a link of `file`, or undefined when it leads somewhere in the repository. */
function problem(file: string, target: string): string | undefined {
  if (/^(https?|mailto):/.test(target)) return undefined;
  const [path, anchor] = target.split('#');
  const resolved = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
  if (relative(ROOT, resolved).startsWith('..')) return 'points outside the repository';
  if (!existsSync(resolved)) return 'leads to nothing';
  if (anchor && resolved.endsWith('.md') && !anchors(resolved).has(anchor))
    return `has no heading #${anchor}`;
  return undefined;
}

/** The documentation links only inside the repository, and every link leads somewhere. */
describe('documentation links', () => {
  it('finds the documents', () => {
    const names = documents().map((f) => relative(ROOT, f));
    expect(names).toEqual(
      expect.arrayContaining([
        'README.md',
        'CONTRIBUTING.md',
        'docs/architecture.md',
        'docs/worker-contract.md',
        'docs/operations.md',
      ]),
    );
  });

  it('every relative link resolves to a file (and heading) in the repository', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of documents()) {
      for (const { target, line } of links(readFileSync(file, 'utf8'))) {
        checked++;
        const why = problem(file, target);
        if (why) broken.push(`${relative(ROOT, file)}:${line} ${target} ${why}`);
      }
    }
    expect(checked).toBeGreaterThan(10);
    expect(broken).toEqual([]);
  });

  it('the checks catch what they are for', () => {
    const readme = join(ROOT, 'README.md');
    expect(problem(readme, '../shared/ARCHITECTURE.md')).toBe('points outside the repository');
    expect(problem(readme, 'docs/nothing-here.md')).toBe('leads to nothing');
    expect(problem(readme, 'docs/architecture.md#no-such-heading')).toBe(
      'has no heading #no-such-heading',
    );
    expect(problem(readme, 'docs/architecture.md#modules')).toBeUndefined();
  });
});
