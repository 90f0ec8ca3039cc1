import { errorMessage } from '../util/error-message';
import { AUTH_CHECKS } from './auth-checks';
import { BODY_CHECKS } from './body-checks';
import { Check, CheckContext } from './conformance-check';
import { ConformanceOptions } from './conformance-options';
import { ConformanceProbe } from './conformance-probe';
import { NotApplicable } from './expectations';
import { LIFECYCLE_CHECKS } from './lifecycle-checks';
import { RULE_CHECKS } from './rule-checks';

export type { ConformanceOptions } from './conformance-options';

export type CheckVerdict = 'pass' | 'fail' | 'skip';

export interface CheckResult {
  name: string;
  verdict: CheckVerdict;
  /** Why it failed or was skipped, or what was observed when it passed. */
  detail: string;
}

/** Every check, in the order it runs: the rules use the task the happy path left behind. */
const CHECKS: readonly Check[] = [
  ...LIFECYCLE_CHECKS,
  ...RULE_CHECKS,
  ...AUTH_CHECKS,
  ...BODY_CHECKS,
];

/**
 * Drives a live worker through the whole contract — happy path, idempotent create, illegal
 * transition, stale fence, bad auth, bad body — and reports a verdict per check. Language
 * neutral: it speaks only HTTP, and every answer must be a valid envelope.
 */
export class ConformanceKit {
  private readonly probe: ConformanceProbe;

  constructor(options: ConformanceOptions) {
    this.probe = new ConformanceProbe(options);
  }

  async run(): Promise<CheckResult[]> {
    const context: CheckContext = { probe: this.probe, main: this.probe.taskId('main') };
    const results: CheckResult[] = [];
    for (const check of CHECKS) {
      try {
        results.push({ name: check.name, verdict: 'pass', detail: await check.run(context) });
      } catch (err) {
        const verdict: CheckVerdict = err instanceof NotApplicable ? 'skip' : 'fail';
        results.push({ name: check.name, verdict, detail: errorMessage(err) });
      }
    }
    return results;
  }
}

/** Renders results as lines `PASS name — detail`, plus a tally line. */
export function formatResults(results: readonly CheckResult[]): string {
  const lines = results.map((r) => `${r.verdict.toUpperCase().padEnd(4)} ${r.name} — ${r.detail}`);
  const count = (v: CheckVerdict): number => results.filter((r) => r.verdict === v).length;
  // Worded unlike a test runner's summary line, so CI never mistakes it for the suite's.
  lines.push(
    `contract checks — pass ${count('pass')}, fail ${count('fail')}, skip ${count('skip')}`,
  );
  return lines.join('\n');
}
