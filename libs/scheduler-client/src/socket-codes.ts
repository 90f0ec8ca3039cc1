/** Socket errors raised before a request was sent: no scheduler acted on it. */
const UNSENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Whether a failed call's socket error says the request never left: it may be sent again. */
export function unsentCode(code: string | undefined): boolean {
  return code !== undefined && UNSENT_CODES.has(code);
}

/** The socket error code of a failed fetch (undici nests it in `cause`). */
export function socketCode(err: unknown): string | undefined {
  const e = err as { code?: string; cause?: { code?: string; cause?: { code?: string } } };
  return e?.cause?.code ?? e?.code ?? e?.cause?.cause?.code;
}
