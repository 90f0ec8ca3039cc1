/**
 * Reading and writing topology definition files for `npm run topology` (bin/topology.ts): JSON or
 * YAML, one definition per document (a YAML file may hold several, separated by `---`; a JSON file
 * one definition or an array of them).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';

export type Definition = Record<string, unknown> & { name: string; nodes: unknown[] };

export class FileProblem extends Error {}

const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);
/** Alias expansions a file may make (the yaml package's own default). */
const MAX_ALIASES = 100;

/** The definition files a path names: the file itself, or a folder's files (sorted, not nested). */
export function filesOf(path: string): string[] {
  const st = statSync(path, { throwIfNoEntry: false });
  if (!st) throw new FileProblem(`${path}: no such file or folder`);
  if (!st.isDirectory()) return [path];
  return readdirSync(path)
    .filter((f) => EXTENSIONS.has(extname(f).toLowerCase()))
    .sort()
    .map((f) => join(path, f));
}

/**
 * The documents of one file (`-`: standard input): JSON (one value, or an array of them when
 * `arrays` is set), or YAML (one or more documents separated by `---`). JSON is told by a `.json`
 * name, or for standard input by its first character.
 */
export function readDocuments(file: string, arrays = true): unknown[] {
  const name = file === '-' ? 'standard input' : file;
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw new FileProblem(
      `${name}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  const json = file === '-' ? /^\s*[[{]/.test(text) : extname(file).toLowerCase() === '.json';
  if (json) {
    try {
      const parsed: unknown = JSON.parse(text);
      return arrays && Array.isArray(parsed) ? parsed : [parsed];
    } catch (err) {
      throw new FileProblem(`${name}: not JSON: ${(err as Error).message}`);
    }
  }
  const docs: unknown[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new FileProblem(`${name}: not YAML: ${doc.errors[0].message}`);
    let value: unknown;
    try {
      // A file whose aliases multiply (a "billion laughs") is refused, not expanded.
      value = doc.toJS({ maxAliasCount: MAX_ALIASES });
    } catch (err) {
      throw new FileProblem(
        `${name}: not YAML: ${(err as Error).message} (at most ${MAX_ALIASES} aliases are expanded)`,
      );
    }
    if (value !== null && value !== undefined) docs.push(value);
  }
  return docs;
}

/** The one object a file holds (a task to create, a timer): anything else is a FileProblem. */
export function readObject(file: string): Record<string, unknown> {
  const docs = readDocuments(file, false);
  const name = file === '-' ? 'standard input' : file;
  if (
    docs.length !== 1 ||
    typeof docs[0] !== 'object' ||
    docs[0] === null ||
    Array.isArray(docs[0])
  )
    throw new FileProblem(
      `${name}: holds one object (found ${docs.length === 1 ? 'something else' : `${docs.length} documents`})`,
    );
  return docs[0] as Record<string, unknown>;
}

/** The definitions in one file, each checked to be an object with a name and nodes. */
export function readDefinitions(file: string): Definition[] {
  const docs = readDocuments(file);
  return docs.map((d, i) => {
    const where = docs.length > 1 ? `${file} (definition ${i + 1})` : file;
    if (typeof d !== 'object' || d === null || Array.isArray(d))
      throw new FileProblem(`${where}: a definition is an object`);
    const def = d as Record<string, unknown>;
    if (typeof def.name !== 'string' || !Array.isArray(def.nodes))
      throw new FileProblem(`${where}: a definition has a name and a list of nodes`);
    return def as Definition;
  });
}

/** The definitions a definition runs as sub-topologies. */
function subsOf(def: Definition): string[] {
  return def.nodes
    .map((n) => (n as { topology?: { name?: unknown } } | null)?.topology?.name)
    .filter((x): x is string => typeof x === 'string');
}

/**
 * The definitions in an order the scheduler can save them: one that runs another of the set as a
 * sub-topology after it (saving checks that a sub-topology is defined). A name twice, or a loop
 * among them, is refused.
 */
export function inSaveOrder(defs: readonly Definition[]): Definition[] {
  const byName = new Map<string, Definition>();
  for (const d of defs) {
    if (byName.has(d.name)) throw new FileProblem(`definition ${d.name} is given twice`);
    byName.set(d.name, d);
  }
  const out: Definition[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (d: Definition, path: string[]): void => {
    if (state.get(d.name) === 'done') return;
    if (state.get(d.name) === 'visiting')
      throw new FileProblem(`definitions run each other: ${[...path, d.name].join(' -> ')}`);
    state.set(d.name, 'visiting');
    // A definition may run itself (the depth limit ends it): that needs nothing saved first.
    for (const sub of subsOf(d).filter((s) => s !== d.name)) {
      const dep = byName.get(sub);
      if (dep) visit(dep, [...path, d.name]);
    }
    state.set(d.name, 'done');
    out.push(d);
  };
  for (const d of defs) visit(d, []);
  return out;
}

/** What export writes of a stored version: the body `apply` takes, nothing the server added. */
export function definitionBody(stored: Record<string, unknown>): Definition {
  const body: Record<string, unknown> = { name: stored.name };
  if (stored.description) body.description = stored.description;
  if (stored.rollback_on_failure) body.rollback_on_failure = true;
  if (stored.fail_fast) body.fail_fast = stored.fail_fast;
  if (typeof stored.deadline_seconds === 'number') body.deadline_seconds = stored.deadline_seconds;
  if (stored.tenant) body.tenant = stored.tenant;
  body.nodes = stored.nodes;
  return body as Definition;
}

/** Definitions as a file's text: YAML documents separated by `---`, or JSON. */
export function formatDefinitions(defs: readonly Definition[], format: 'yaml' | 'json'): string {
  if (format === 'json') return `${JSON.stringify(defs.length === 1 ? defs[0] : defs, null, 2)}\n`;
  return defs.map((d) => stringify(d, { lineWidth: 0 })).join('---\n');
}
