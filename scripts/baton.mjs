// `npm run baton -- <group> <command> ...` (and `npm run topology -- ...`): runs the built command
// line, building the project first only when it has never been built (`npm run build` after a
// pull brings a newer one). Installed with `npm link` (or `npm install -g .`), `baton` runs
// dist/bin/baton.js directly.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist', 'bin', 'baton.js');
if (!existsSync(cli)) {
  process.stderr.write('baton: not built yet: building once (npm run build)\n');
  const built = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
const run = spawnSync(process.execPath, [cli, ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(run.status ?? 1);
