import { ContractErrorCode } from '../errors/contract.exception';
import { TaskStatus } from '../enums/task-status.enum';
import { RawAnswer } from './raw-caller';

/** A failed expectation inside a check; its message is the check's reason. */
export class Expectation extends Error {}
/** A check that cannot apply to this worker (an optional call it does not implement). */
export class NotApplicable extends Error {}

/** An answer's data object, as the checks read it. */
export type Data = Record<string, unknown>;

export function expect(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Expectation(message);
}

export function expectStatus(data: Data, status: TaskStatus, what: string): void {
  expect(
    data.task_status === status,
    `${what} answered task_status ${String(data.task_status)}, expected ${status}`,
  );
}

export function expectError(
  answer: RawAnswer,
  status: number,
  code: ContractErrorCode | undefined,
  what: string,
): void {
  const env = answer.json as { code: number; message: string };
  expect(
    answer.status === status,
    `${what}: expected HTTP ${status}, got ${answer.status} (code ${env.code}: ${env.message})`,
  );
  if (code !== undefined)
    expect(env.code === code, `${what}: expected code ${code}, got ${env.code}`);
}

export function needOutcome(outcome: string | undefined): void {
  if (!outcome)
    throw new Expectation('the run reached no outcome, so this step could not be tried');
}
