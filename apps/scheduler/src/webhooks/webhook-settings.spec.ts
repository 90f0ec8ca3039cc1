import { webhooksConfig } from '../config';

describe('webhook delivery settings', () => {
  it('defaults: a window of 4 growing to half the slots (64 of 128), slow at 2 s, a claim 5 s longer than an attempt', () => {
    expect(webhooksConfig({})).toMatchObject({
      timeoutMs: 10_000,
      perEndpoint: 4,
      perEndpointMax: 64,
      slowMs: 2000,
      concurrency: 128,
      claimLeaseMs: 15_000,
    });
  });

  it('follows a shorter timeout: slow at half of it, the claim still outlasting it', () => {
    expect(webhooksConfig({ BATON_WEBHOOK_TIMEOUT: '1s' })).toMatchObject({
      slowMs: 500,
      claimLeaseMs: 6000,
    });
  });

  it('refuses a claim that an attempt could outlast, and a bound under the start', () => {
    expect(() =>
      webhooksConfig({ BATON_WEBHOOK_TIMEOUT: '10s', BATON_WEBHOOK_CLAIM_LEASE: '10s' }),
    ).toThrow(/BATON_WEBHOOK_CLAIM_LEASE/);
    expect(() =>
      webhooksConfig({ BATON_WEBHOOK_PER_ENDPOINT: '8', BATON_WEBHOOK_PER_ENDPOINT_MAX: '4' }),
    ).toThrow(/BATON_WEBHOOK_PER_ENDPOINT_MAX/);
    expect(() => webhooksConfig({ BATON_WEBHOOK_TIMEOUT: '1s', BATON_WEBHOOK_SLOW: '2s' })).toThrow(
      /BATON_WEBHOOK_SLOW/,
    );
    expect(webhooksConfig({ BATON_WEBHOOK_PER_ENDPOINT: '100' }).perEndpointMax).toBe(100);
  });

  it('keeps a per-endpoint limit set alone as the limit, and grows to half of a larger total', () => {
    expect(webhooksConfig({ BATON_WEBHOOK_PER_ENDPOINT: '1' })).toMatchObject({
      perEndpoint: 1,
      perEndpointMax: 1,
    });
    expect(webhooksConfig({ BATON_WEBHOOK_CONCURRENCY: '256' }).perEndpointMax).toBe(64);
    expect(webhooksConfig({ BATON_WEBHOOK_CONCURRENCY: '64' }).perEndpointMax).toBe(32);
    expect(webhooksConfig({ BATON_WEBHOOK_CONCURRENCY: '4' }).perEndpointMax).toBe(4);
  });
});
