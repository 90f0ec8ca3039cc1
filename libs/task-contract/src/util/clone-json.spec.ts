import { CreateInfoDto } from '../dto/create-info.dto';
import { cloneJson } from './clone-json';

describe('cloneJson', () => {
  it('copies what structuredClone copies, to the same value', () => {
    const info = Object.assign(new CreateInfoDto(), { task_type: 'demo.echo', task_name: 'n' });
    const values: unknown[] = [
      null,
      3,
      'x',
      true,
      [1, [2, { a: null }], 'z'],
      { a: 1, b: { c: [1, 2, { d: 'e' }], u: undefined }, n: null },
      { when: new Date('2026-11-25T06:00:00Z'), map: new Map([[1, { x: 2 }]]) },
      { info },
      JSON.parse('{"__proto__": {"polluted": true}, "k": 1}'),
    ];
    // (structuredClone makes its objects in Node's own realm, not the test's: compare values.)
    for (const v of values) expect(cloneJson(v)).toEqual(structuredClone(v));
    expect(Object.keys(cloneJson({ u: undefined }))).toEqual(['u']);
    expect(Object.prototype.toString.call(cloneJson({ d: new Date(7) }).d)).toBe('[object Date]');
  });

  it('shares nothing with the original', () => {
    const original = { a: { b: [1, { c: 2 }] }, d: new Date(0) };
    const copy = cloneJson(original);
    (copy.a.b[1] as { c: number }).c = 9;
    copy.d.setTime(5);
    expect(original).toEqual({ a: { b: [1, { c: 2 }] }, d: new Date(0) });
  });

  it('keeps an own "__proto__" key an own key, never the prototype', () => {
    const copy = cloneJson(
      JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>,
    );
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Object.keys(copy)).toEqual(['__proto__']);
  });

  it('leaves cycles and deep nesting to structuredClone, and throws on functions as it does', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const copy = cloneJson(cyclic);
    expect(copy).not.toBe(cyclic);
    expect(copy.self).toBe(copy);
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 200; i++) deep = (deep.next = {}) as Record<string, unknown>;
    expect(cloneJson(root)).toEqual(root);
    expect(() => cloneJson({ f: () => 1 })).toThrow();
  });
});
