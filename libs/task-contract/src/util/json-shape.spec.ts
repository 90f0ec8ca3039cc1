import { hasLoneSurrogate, jsonShapeProblem, mayHaveSurrogates } from './json-shape';

const limits = { maxDepth: 4, maxElements: 10 };
const problem = (text: string | Buffer): string | undefined =>
  jsonShapeProblem(typeof text === 'string' ? Buffer.from(text) : text, limits);

describe('jsonShapeProblem', () => {
  it('passes bodies within the limits, whatever their strings hold', () => {
    expect(problem('{"a":{"b":{"c":[1,2,3]}}}')).toBeUndefined();
    expect(problem('[]')).toBeUndefined();
    expect(problem('{ }')).toBeUndefined();
    // Brackets, commas and escaped quotes inside strings are not structure.
    expect(problem('{"a":"[[[[[[,,,,,,,,,,,,\\"{{{{{{"}')).toBeUndefined();
    expect(problem('"\\\\"')).toBeUndefined();
  });

  it('refuses nesting past maxDepth, objects and arrays alike', () => {
    expect(problem('[[[[1]]]]')).toBeUndefined();
    expect(problem('[[[[[1]]]]]')).toMatch(/deeper than 4 levels/);
    expect(problem('{"a":{"b":{"c":{"d":{}}}}}')).toMatch(/deeper than 4/);
    // Unclosed: still refused on the way down, before any parser sees it.
    expect(problem('['.repeat(100_000))).toMatch(/deeper than 4/);
  });

  it('counts members and items over the whole body, the first of each container too', () => {
    expect(problem(JSON.stringify(Array.from({ length: 10 }, (_, i) => i)))).toBeUndefined();
    expect(problem(JSON.stringify(Array.from({ length: 11 }, (_, i) => i)))).toMatch(
      /more than 10 members and items/,
    );
    // 5 members + 3 items + 3 items = 11.
    expect(problem('{"a":1,"b":2,"c":3,"d":[1,2,3],"e":[ 4,5,6 ]}')).toMatch(/more than 10/);
    // Empty containers hold nothing.
    expect(problem('[[],[],[],{},{ },[ ]]')).toBeUndefined();
  });

  it('refuses bytes that are not UTF-8', () => {
    expect(problem(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]))).toBe(
      'the body is not valid UTF-8',
    );
    expect(problem('{"a":"é ✓ 😀"}')).toBeUndefined();
  });
});

describe('lone surrogates', () => {
  it('finds a lone surrogate in a value or a key, deep down, and passes pairs', () => {
    const text = '{"a":[{"b":"\\ud800"}]}';
    expect(mayHaveSurrogates(Buffer.from(text))).toBe(true);
    expect(hasLoneSurrogate(JSON.parse(text))).toBe(true);
    expect(hasLoneSurrogate(JSON.parse('{"\\uDC00":1}'))).toBe(true);
    expect(hasLoneSurrogate(JSON.parse('{"a":"\\ud83d\\ude00"}'))).toBe(false);
    expect(mayHaveSurrogates(Buffer.from('{"a":"\\u00e9"}'))).toBe(false);
  });
});
