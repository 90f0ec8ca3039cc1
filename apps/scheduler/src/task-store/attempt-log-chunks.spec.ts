import {
  AttemptLogLine,
  bodyOf,
  chunksOf,
  lineBytes,
  linesOf,
  LOG_LEVELS,
} from './attempt-log-chunks';

const line = (seq: number, at: number, over: Partial<AttemptLogLine> = {}): AttemptLogLine => ({
  seq,
  at,
  level: LOG_LEVELS[seq % 4],
  message: `line ${seq}`,
  fields: null,
  ...over,
});

describe('attempt log chunks', () => {
  it('gives back the lines it packed: gaps in seq, a clock that steps back, fields, any text', () => {
    const lines = [
      line(3, 1_764_400_000_123),
      line(4, 1_764_400_000_123, { fields: { host: 'db1', ms: [1, { deep: null }] } }),
      line(9, 1_764_399_999_900, { message: 'a "quoted" caf\u00e9 \u{1F600}\n' }),
      line(10, 1_764_400_003_000, { message: '' }),
    ];
    const { rows, bytes } = chunksOf('T-1', 2, lines);
    expect(rows).toHaveLength(1);
    const [c] = rows;
    expect([c.task_id, c.attempt, c.first_seq, c.last_seq, c.line_count]).toEqual([
      'T-1',
      2,
      3,
      10,
      4,
    ]);
    expect(c.levels).toBe(0b1111);
    expect(linesOf(c.body, c.first_seq)).toEqual(lines);
    expect(bytes).toBe(lines.reduce((n, l) => n + lineBytes(l), 0));
    expect(c.bytes).toBe(bytes);
    // The steps are small: a line's time is written once in full, the rest as steps.
    expect(c.body.match(/1764/g)).toHaveLength(1);
  });

  it('splits a long batch into chunks each readable on its own', () => {
    const long = 'x'.repeat(4000);
    const lines = Array.from({ length: 200 }, (_, i) =>
      line(i, 1_764_400_000_000 + i, { message: long }),
    );
    const { rows } = chunksOf('T-2', 1, lines);
    expect(rows.length).toBeGreaterThan(2);
    expect(rows.every((r) => r.body.length < 256 * 1024 + 5000)).toBe(true);
    const back = rows.flatMap((r) => linesOf(r.body, r.first_seq));
    expect(back).toEqual(lines);
    expect(rows.map((r) => [r.first_seq, r.last_seq])).toEqual(
      rows.map((r) => {
        const mine = linesOf(r.body, r.first_seq);
        return [mine[0].seq, mine[mine.length - 1].seq];
      }),
    );
  });

  it("writes what is left of a chunk against the chunk's first seq", () => {
    const lines = [line(5, 100), line(6, 150), line(8, 170)];
    const [c] = chunksOf('T-3', 1, lines).rows;
    const left = linesOf(c.body, c.first_seq).slice(1);
    expect(linesOf(bodyOf(left, c.first_seq), c.first_seq)).toEqual(left);
  });
});
