import { errorMessage } from '../util/error-message';
import { AUTH_CHECKS } from './auth-checks';
import { BODY_CHECKS } from './body-checks';
import { Check, CheckContext, ContractSection } from './conformance-check';
import { ConformanceOptions } from './conformance-options';
import { ConformanceProbe } from './conformance-probe';
import { NotApplicable } from './expectations';
import { LIFECYCLE_CHECKS } from './lifecycle-checks';
import { RULE_CHECKS } from './rule-checks';
import { RUNNING_CHECKS } from './running-checks';
import { STRICT_CHECKS } from './strict-checks';

export type { ConformanceOptions } from './conformance-options';

export type CheckVerdict = 'pass' | 'fail' | 'skip';

export interface CheckResult {
  name: string;
  /** The section of the worker contract the check enforces. */
  section: ContractSection;
  verdict: CheckVerdict;
  /** Why it failed or was skipped, or what was observed when it passed. */
  detail: string;
}

/** The section of a check that names none: the one its group enforces. */
const inSection = (section: ContractSection, checks: readonly Check[]): Check[] =>
  checks.map((c) => ({ ...c, section: c.section ?? section }));

/** The happy path, from create to clean: it runs first, and always. */
const HAPPY_PATH: readonly Check[] = inSection('Calls', LIFECYCLE_CHECKS);

/** Every check, in the order it runs: the rules use the task the happy path left behind. */
export const CHECKS: readonly Check[] = [
  ...HAPPY_PATH,
  ...inSection('Statuses and transitions', RULE_CHECKS),
  ...inSection('Headers the scheduler sends', AUTH_CHECKS),
  ...inSection('Calls', BODY_CHECKS),
  ...STRICT_CHECKS,
  ...RUNNING_CHECKS,
];

/**
 * Drives a live worker through the whole contract — happy path, idempotent create, illegal
 * transition, stale fence, bad auth, bad body — and reports a verdict per check. Language
 * neutral: it speaks only HTTP, and every answer must be a valid envelope.
 */
export class ConformanceKit {
  private readonly probe: ConformanceProbe;
  private readonly checks: readonly Check[];

  /** Throws when `options.only` names no check (a typo would otherwise pass on the happy path). */
  constructor(options: ConformanceOptions) {
    this.probe = new ConformanceProbe(options);
    this.checks = options.only ? selectChecks(options.only) : CHECKS;
  }

  async run(): Promise<CheckResult[]> {
    const context: CheckContext = { probe: this.probe, main: this.probe.taskId('main') };
    const results: CheckResult[] = [];
    for (const check of this.checks) {
      const section = check.section ?? 'Calls';
      try {
        const detail = await check.run(context);
        results.push({ name: check.name, section, verdict: 'pass', detail });
      } catch (err) {
        const verdict: CheckVerdict = err instanceof NotApplicable ? 'skip' : 'fail';
        results.push({ name: check.name, section, verdict, detail: errorMessage(err) });
      }
    }
    return results;
  }
}

/** Every check's name, in the order the kit runs them. */
export const CHECK_NAMES: readonly string[] = CHECKS.map((c) => c.name);

/** The happy path, then the checks whose name contains one of `only` (case-insensitive). */
function selectChecks(only: readonly string[]): Check[] {
  if (only.length === 0) throw new Error('only names no check');
  const texts = only.map((t) => t.toLowerCase());
  const matches = (c: Check): boolean => texts.some((t) => c.name.toLowerCase().includes(t));
  const unmatched = only.filter(
    (t) => !CHECKS.some((c) => c.name.toLowerCase().includes(t.toLowerCase())),
  );
  if (unmatched.length > 0)
    throw new Error(
      `no check's name contains ${unmatched.map((t) => JSON.stringify(t)).join(', ')}`,
    );
  return CHECKS.filter((c) => HAPPY_PATH.includes(c) || matches(c));
}

/** Renders results as lines `PASS name — detail`, plus a tally line. */
export function formatResults(results: readonly CheckResult[]): string {
  const lines = results.map(
    (r) => `${r.verdict.toUpperCase().padEnd(4)} [${r.section}] ${r.name} — ${r.detail}`,
  );
  const count = (v: CheckVerdict): number => results.filter((r) => r.verdict === v).length;
  // Worded unlike a test runner's summary line, so CI never mistakes it for the suite's.
  lines.push(
    `contract checks — pass ${count('pass')}, fail ${count('fail')}, skip ${count('skip')}`,
  );
  return lines.join('\n');
}
