import { Clock } from '@baton/time';
import { AuthConfig } from '../worker/auth/request-auth';

export interface ConformanceOptions {
  /** The worker's base URL. */
  url: string;
  /** The task type to drive. */
  type: string;
  /** Credentials the worker accepts. The contract requires auth: `none` fails the auth checks. */
  auth: AuthConfig;
  /** params for the tasks the kit creates (they must be valid for the type). */
  params?: Record<string, unknown>;
  /** How long to wait for an async run to reach an outcome. Default 30 s. */
  outcomeTimeoutMs?: number;
  /** Per-request timeout. Default 10 s. */
  requestTimeoutMs?: number;
  /**
   * params for a run that lasts a few seconds at least (an async type), for the checks of a
   * running task: pause, cancel, a new attempt over it, restart. Without them those are skipped.
   */
  longParams?: Record<string, unknown>;
  /** Another task type the worker serves, for the check of a task id held by another type. */
  otherType?: string;
  /** The worker's body limit the kit tests 413 just above. Default 1 MiB. */
  maxBodyBytes?: number;
  /**
   * A shell command that restarts the worker (kill it, start it again at the same URL), for the
   * crash-recovery check. Without it that check is skipped.
   */
  restartCmd?: string;
  /**
   * Runs only the checks whose name contains one of these texts (case-insensitive), after the
   * happy path (the `Calls` checks from create to clean), which every other check builds on and
   * which always runs. Default: every check.
   */
  only?: readonly string[];
  /**
   * The kit's time source: its waits, deadlines and signature timestamps. The worker under test
   * runs on real time, so leave it the real clock unless testing the kit itself. Default:
   * systemClock.
   */
  clock?: Clock;
}
