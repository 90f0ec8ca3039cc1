import { ContractVersion } from '../openapi/contract-changelog';
import { checkChangeProblems, fingerprint, kitFingerprints } from './check-fingerprints';

const version = (checks: string[][], untested?: string): ContractVersion[] => [
  {
    version: '1.3.0',
    date: '2026-12-01',
    breaking: false,
    changes: checks.map((c, i) => ({ change: `change ${i}`, checks: c, untested })),
  },
];

describe('kit checks and the changelog', () => {
  it('digests what a check does, not its comments or spacing', () => {
    const a = { run: async () => 'x'.repeat(2) };
    // prettier-ignore
    const b = { run: async () =>   /* says the same */ 'x'.repeat(2) };
    const c = { run: async () => 'x'.repeat(3) };
    expect(fingerprint(a)).toBe(fingerprint(b));
    expect(fingerprint(a)).not.toBe(fingerprint(c));
  });

  it('refuses a check added, changed or removed that no change of the newest version names', () => {
    const recorded = { kept: 'k', changed: 'c1', removed: 'r' };
    const current = { kept: 'k', changed: 'c2', added: 'a' };
    expect(checkChangeProblems(recorded, current, version([['kept']]))).toEqual([
      expect.stringMatching(/“changed” was changed, and no change of version 1\.3\.0 names it/),
      expect.stringMatching(/“removed” was removed/),
      expect.stringMatching(/“added” was added/),
    ]);
    expect(
      checkChangeProblems(recorded, current, version([['changed', 'added'], ['removed']])),
    ).toEqual([]);
  });

  it('refuses a changelog line that names no check without saying why, or a check the kit lacks', () => {
    expect(checkChangeProblems(undefined, { a: '1' }, version([[]]))).toEqual([
      expect.stringMatching(/no kit check tests and no word on why/),
    ]);
    expect(checkChangeProblems(undefined, { a: '1' }, version([[]], 'words only'))).toEqual([]);
    expect(checkChangeProblems(undefined, { a: '1' }, version([['b']]))).toEqual([
      expect.stringMatching(/names “b”, which the kit does not have/),
    ]);
  });

  it('has a fingerprint for every check of the kit, each name once', () => {
    const all = kitFingerprints();
    expect(Object.keys(all).length).toBeGreaterThan(30);
    expect(all['clean: a repeat answers FINISH and changes nothing']).toMatch(/^[0-9a-f]{16}$/);
  });
});
