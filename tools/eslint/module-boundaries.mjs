// @ts-check
// ESLint rule: inside apps/scheduler/src, a file may import another module's code only through
// that module's index.ts (its public face: the Nest module and what it exports). Specs may also
// use another module's `testing/` helpers. See CONTRIBUTING.md, "Modules".
import { existsSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..', '..');
const APP = join(ROOT, 'apps', 'scheduler', 'src');

/** The module folder a path is in (first folder under the app), or undefined at the app's root. */
function moduleOf(file) {
  const rel = relative(APP, file);
  if (rel.startsWith('..')) return undefined;
  const parts = rel.split(sep);
  return parts.length > 1 ? parts[0] : undefined;
}

const isSpec = (file) => /\.(spec|int-spec|e2e-spec)\.ts$/.test(file);

/** @type {import('eslint').Rule.RuleModule} */
const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'import another scheduler module only through its index.ts' },
    messages: {
      deep: "'{{spec}}' reaches into module '{{module}}': import from '{{barrel}}' (its index.ts) instead, and export what is needed there if it is meant for other modules",
      noIndex: "module '{{module}}' has no index.ts: give it one that exports its public face",
    },
    schema: [],
  },
  create(context) {
    const file = resolve(context.filename);
    if (relative(APP, file).startsWith('..')) return {};
    const own = moduleOf(file);
    const check = (node) => {
      const spec = node.source && node.source.value;
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = resolve(dirname(file), spec);
      const mod = moduleOf(target);
      if (!mod || mod === own) return;
      const folder = join(APP, mod);
      if (!existsSync(folder) || !statSync(folder).isDirectory()) return;
      const inside = relative(folder, target);
      if (inside === '' || inside === 'index') {
        if (!existsSync(join(folder, 'index.ts')))
          context.report({ node: node.source, messageId: 'noIndex', data: { module: mod } });
        return;
      }
      if (isSpec(file) && inside.split(sep)[0] === 'testing') return;
      let barrel = relative(dirname(file), folder);
      if (!barrel.startsWith('.')) barrel = `./${barrel}`;
      context.report({ node: node.source, messageId: 'deep', data: { spec, module: mod, barrel } });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: (node) =>
        node.source.type === 'Literal' ? check({ source: node.source }) : undefined,
    };
  },
};

export default { rules: { 'module-boundaries': rule } };
