/**
 * Resolves at `at` (ms on `now`'s clock): a timer for the bulk, then turns of the loop for the
 * last fraction, so it is neither early nor a timer's granularity late.
 */
export async function waitUntil(at: number, now: () => number = Date.now): Promise<void> {
  const left = at - now();
  if (left > 1) await new Promise((r) => setTimeout(r, left - 1));
  while (now() < at) await new Promise((r) => setImmediate(r));
}
