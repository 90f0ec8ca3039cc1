import { Clock, systemClock } from '@baton/time';

/**
 * Resolves at `at` (epoch ms on `clock`): a sleep for the bulk, then turns of the loop for the
 * last fraction, so it is neither early nor a timer's granularity late.
 */
export async function waitUntil(at: number, clock: Clock = systemClock): Promise<void> {
  const left = at - clock.now();
  if (left > 1) await clock.sleep(left - 1);
  while (clock.now() < at) await new Promise((r) => setImmediate(r));
}
