/** The socket error code of a failed request (ECONNREFUSED, UND_ERR_SOCKET, ...), if it has one. */
export function socketErrorCode(err: unknown): string | undefined {
  const e = err as { code?: string; cause?: { code?: string } } | undefined;
  return e?.code ?? e?.cause?.code;
}
