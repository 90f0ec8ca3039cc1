/** The message of anything thrown: handlers and transports may throw values that are not Errors. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
