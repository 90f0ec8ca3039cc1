import { Env, oneOf } from './env-values';

/** How the scheduler writes its log (docs/operations.md). */
export interface LogConfig {
  /** json: one object a line, for a log pipeline; pretty: coloured lines for a terminal. */
  format: 'json' | 'pretty';
  /** The lowest level written. */
  level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
}

export function logConfig(env: Env): LogConfig {
  return {
    format: oneOf(env, 'BATON_LOG_FORMAT', ['json', 'pretty'] as const, 'json'),
    level: oneOf(
      env,
      'BATON_LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const,
      'info',
    ),
  };
}
