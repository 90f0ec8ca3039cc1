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
}
