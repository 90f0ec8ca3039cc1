import { randomHex } from './random-pool';

/** Header names of the contract, lower-case as Node reads them. */
export const HEADER = {
  FENCE: 'x-baton-fence',
  REQUEST_ID: 'x-request-id',
  TRACEPARENT: 'traceparent',
  AUTHORIZATION: 'authorization',
  TIMESTAMP: 'x-baton-timestamp',
  NONCE: 'x-baton-nonce',
  SIGNATURE: 'x-baton-signature',
} as const;

/** A fresh W3C traceparent (version 00, sampled). */
export function newTraceparent(): string {
  return `00-${randomHex(16)}-${randomHex(8)}-01`;
}

/**
 * Reads X-Baton-Fence: a non-negative safe integer, or `undefined` when absent or malformed.
 */
export function parseFence(value: string | string[] | undefined): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || !/^\d{1,16}$/.test(raw)) return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : undefined;
}
