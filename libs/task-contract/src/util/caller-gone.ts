import type { Socket } from 'node:net';

/**
 * Whether the caller of a request has gone away (its connection closed or ended) before the answer
 * was sent: a scheduler killed while it waited on a sync run. Takes the request as Nest hands it
 * to a controller, Fastify's (the Node request under `raw`) or Express's (the Node request itself).
 */
export function callerGone(request: unknown): () => boolean {
  const req = request as { raw?: { socket?: Socket }; socket?: Socket } | undefined;
  const socket = req?.raw?.socket ?? req?.socket;
  // No socket to look at (an in-process call): nobody can tell, so nobody is gone.
  if (!socket) return () => false;
  return () => socket.destroyed || !socket.writable;
}
