import type { Cluster, Redis } from 'ioredis';

/**
 * Makes a client start a new connection when a command times out (`commandTimeout`). Redis
 * answers in order: a reply that never came (a partition that lost the command) would leave every
 * later command of the connection waiting, or matched with a reply that is not its own; a fresh
 * connection has no such debt. Commands under way on the old one fail (and are retried by their
 * callers), new ones wait for the new one.
 */
export function reconnectOnTimeout<T extends Redis | Cluster>(client: T): T {
  const send = client.sendCommand.bind(client) as Redis['sendCommand'];
  (client as Redis).sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    const result = send(...args);
    args[0].promise.catch((err: unknown) => {
      if (err instanceof Error && err.message === 'Command timed out' && client.status === 'ready')
        client.disconnect(true);
    });
    return result;
  }) as Redis['sendCommand'];
  return client;
}
