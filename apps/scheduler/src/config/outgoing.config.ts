import { AllowedNetworks } from '@baton/task-contract';
import { WebhooksConfig, webhooksConfig } from './webhooks.config';

/** Where the scheduler may call out to, besides the public internet (docs/operations.md). */
export interface OutgoingConfig {
  /** Networks registered workers may be in (they register with the shared secret). */
  workers: AllowedNetworks;
  /** Webhooks and tasks' `callback_url`s: where they may point, how they are sent and retried. */
  webhooks: WebhooksConfig;
}

/** Loopback and the private ranges: where workers live. Link-local (cloud metadata) is not. */
export const DEFAULT_WORKER_NETWORKS =
  '127.0.0.0/8,::1/128,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7';

export function outgoingConfig(env: NodeJS.ProcessEnv): OutgoingConfig {
  const networks = (name: string, fallback: string): AllowedNetworks => {
    try {
      return AllowedNetworks.parse(env[name] ?? fallback);
    } catch (err) {
      throw new Error(`${name}: ${(err as Error).message}`);
    }
  };
  return {
    workers: networks('BATON_WORKER_NETWORKS', DEFAULT_WORKER_NETWORKS),
    webhooks: webhooksConfig(env),
  };
}
