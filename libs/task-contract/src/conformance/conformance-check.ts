import { ConformanceProbe } from './conformance-probe';

/** What the checks share: the probe, and the task the happy path drives from create to clean. */
export interface CheckContext {
  readonly probe: ConformanceProbe;
  /** The happy path's task id. */
  readonly main: string;
  /** The outcome the happy path's run reached (SUCCESS or FAIL), once known. */
  outcome?: string;
}

/**
 * One check of the contract. It returns what it observed when it passed; it throws an
 * Expectation when it failed, NotApplicable when it does not apply to this worker.
 */
export interface Check {
  readonly name: string;
  /** The section of the worker contract (a heading of its description) the check enforces. */
  readonly section?: ContractSection;
  run(context: CheckContext): Promise<string>;
}

/** Headings of the worker contract's description, as checks name them. */
export type ContractSection =
  | 'Calls'
  | 'Order of checks'
  | 'Envelope'
  | 'Statuses and transitions'
  | 'Headers the scheduler sends'
  | 'Idempotency and attempts'
  | 'Crash recovery'
  | 'Pausing'
  | 'Timing'
  | 'Callbacks';
