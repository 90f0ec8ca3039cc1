import { createHash } from 'node:crypto';
import { ContractVersion } from '../openapi/contract-changelog';
import { CHECKS } from './conformance-kit';
import { WORKER_SIDE_CHECKS } from './worker-side/worker-side-checks';

/** What each kit check tests, as a digest of its code (comments and spacing left out), by name. */
export type CheckFingerprints = Record<string, string>;

/** The digest of a check's code: a change of what it does changes it, a comment or a space does not. */
export function fingerprint(check: { run: (...args: never[]) => unknown }): string {
  const code = check.run
    .toString()
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`\\])\/\/[^\n]*/g, '$1')
    .replace(/\s+/g, ' ')
    .trim();
  return createHash('sha256').update(code).digest('hex').slice(0, 16);
}

/** Every kit check's fingerprint (both sides of the contract), by name, in the kit's order. */
export function kitFingerprints(
  checks: readonly { name: string; run: (...args: never[]) => unknown }[] = [
    ...CHECKS,
    ...WORKER_SIDE_CHECKS,
  ],
): CheckFingerprints {
  const out: CheckFingerprints = {};
  for (const c of checks) out[c.name] = fingerprint(c);
  return out;
}

/**
 * Why the kit may not change as it did: a check added, changed or removed since `recorded`
 * (the fingerprints written with the last document) that no line of the newest changelog version
 * names; and a changelog line naming a check the kit does not have. Empty when all is said.
 */
export function checkChangeProblems(
  recorded: CheckFingerprints | undefined,
  current: CheckFingerprints,
  changelog: readonly ContractVersion[],
): string[] {
  const problems: string[] = [];
  const newest = changelog[0];
  const named = new Set(newest.changes.flatMap((c) => c.checks));
  if (recorded) {
    for (const name of new Set([...Object.keys(recorded), ...Object.keys(current)])) {
      const was = recorded[name];
      const now = current[name];
      if (was === now || named.has(name)) continue;
      const how = was === undefined ? 'added' : now === undefined ? 'removed' : 'changed';
      problems.push(
        `kit check “${name}” was ${how}, and no change of version ${newest.version} names it: a behaviour change goes in the changelog (WORKER_CONTRACT_CHANGELOG) with the check that tests it`,
      );
    }
  }
  for (const v of changelog)
    for (const c of v.changes) {
      // Older versions are history: a check they name may have been replaced since.
      for (const name of v === newest ? c.checks : [])
        if (!(name in current) && !(recorded && name in recorded))
          problems.push(
            `the changelog of ${v.version} names “${name}”, which the kit does not have`,
          );
      if (c.checks.length === 0 && !c.untested)
        problems.push(
          `the changelog of ${v.version} has a change no kit check tests and no word on why: “${c.change}”`,
        );
    }
  return problems;
}
