// Prints each tier's time in one lane's Jest results (its files run one at a time), e.g.
// "unit 30 s + integration 204 s + e2e 851 s". Used by scripts/test.sh for its timing line.
import { readFileSync } from 'node:fs';

const results = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const tiers = { unit: 0, integration: 0, e2e: 0 };
for (const file of results.testResults) {
  const tier = file.name.endsWith('.e2e-spec.ts')
    ? 'e2e'
    : file.name.endsWith('.int-spec.ts')
      ? 'integration'
      : 'unit';
  tiers[tier] += (file.endTime - file.startTime) / 1000;
}
console.log(
  Object.entries(tiers)
    .filter(([, s]) => s > 0)
    .map(([tier, s]) => `${tier} ${Math.round(s)} s`)
    .join(' + '),
);
