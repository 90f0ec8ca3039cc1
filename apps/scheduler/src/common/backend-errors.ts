/** Errors of a backend that did not answer (or went away), not of the request itself. */
const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_CONNECTION_LOST',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** Whether an error says a backend did not answer: a driver's timeout or a lost connection. */
export function backendUnreachable(err: unknown): boolean {
  const e = err as { code?: unknown; driverError?: { code?: unknown }; message?: unknown } | null;
  const code = e?.driverError?.code ?? e?.code;
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return true;
  // ioredis: a command past its commandTimeout, or one that could not be sent.
  return (
    typeof e?.message === 'string' &&
    /^(Command timed out|Connection is closed|Reached the max retries per request limit)/.test(
      e.message,
    )
  );
}
