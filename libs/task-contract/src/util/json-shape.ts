import { isUtf8 } from 'node:buffer';

/** How deep and how wide a JSON body may be before any of it is parsed or validated. */
export interface JsonShapeLimits {
  /** Objects and arrays nested inside one another, the outermost counting 1. */
  maxDepth: number;
  /** Members of objects plus items of arrays, over the whole body. */
  maxElements: number;
}

/**
 * The defaults: far beyond any task's params (a batch of 500 tasks with 30 fields each is 15,000
 * elements), far below what makes validation, copying or the stack suffer.
 */
export const DEFAULT_JSON_SHAPE: JsonShapeLimits = { maxDepth: 64, maxElements: 20_000 };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * Why a JSON text is refused before it is parsed, or `undefined`: not UTF-8, nested deeper than
 * `maxDepth`, or more than `maxElements` members and items. One pass over the bytes, no
 * allocation: a hostile body costs about what reading it cost. Malformed JSON passes here and is
 * refused by the parser, with the parser's own message.
 */
export function jsonShapeProblem(raw: Buffer, limits: JsonShapeLimits): string | undefined {
  if (!isUtf8(raw)) return 'the body is not valid UTF-8';
  let depth = 0;
  // A container's first element has no comma before it: counted when something follows its opener.
  let elements = 0;
  let afterOpener = false;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (afterOpener && !WHITESPACE.has(c)) {
      afterOpener = false;
      if (c !== CLOSE_OBJECT && c !== CLOSE_ARRAY) elements++;
    }
    if (c === QUOTE) inString = true;
    else if (c === COMMA) elements++;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > limits.maxDepth)
        return `the body nests objects and arrays deeper than ${limits.maxDepth} levels`;
      afterOpener = true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
    else continue;
    if (elements > limits.maxElements)
      return `the body has more than ${limits.maxElements} members and items`;
  }
  return undefined;
}

/** Whether the text has a `\\uD…` escape at all: the only way JSON can carry a lone surrogate. */
export function mayHaveSurrogates(raw: Buffer): boolean {
  return raw.includes('\\ud') || raw.includes('\\uD');
}

type WellFormed = { isWellFormed(): boolean };

/**
 * Whether a string of a parsed body (keys included) is not well-formed Unicode. A lone surrogate
 * (`"\ud800"`) parses, but a database stores it as U+FFFD: what was answered would not be what
 * was kept.
 */
export function hasLoneSurrogate(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (!(v as unknown as WellFormed).isWellFormed()) return true;
    } else if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, item] of Object.entries(v)) {
        if (!(k as unknown as WellFormed).isWellFormed()) return true;
        stack.push(item);
      }
    }
  }
  return false;
}

type ParserDone = (err: (Error & { statusCode?: number }) | null, value?: unknown) => void;
type JsonParser = (req: unknown, body: string | Buffer, done: ParserDone) => void;

interface FastifyJsonParsers {
  getDefaultJsonParser(proto: string, ctor: string): JsonParser;
}

/** Shaped like Fastify's own parser errors, which Nest turns into a 400 with this message. */
function refusal(message: string): Error & { statusCode: number } {
  const err = Object.assign(new Error(message), { statusCode: 400 });
  err.name = 'FastifyError';
  return err;
}

/**
 * Puts the shape check in front of the JSON parser a Fastify instance hands out, so that Nest's
 * body parser (which asks for it on every request) and `ContractFastPath` (which asks once) both
 * refuse a body too deep, too wide, not UTF-8 or with a lone surrogate as malformed (400), before
 * validation could overflow the stack or spend seconds on it. Call it right after the app is
 * created, before `ContractFastPath.attach`.
 */
export function limitJsonShape(
  fastify: unknown,
  limits: JsonShapeLimits = DEFAULT_JSON_SHAPE,
): void {
  const instance = fastify as FastifyJsonParsers;
  const original = instance.getDefaultJsonParser.bind(instance);
  instance.getDefaultJsonParser = (proto, ctor) => {
    const parse = original(proto, ctor);
    return (req, body, done) => {
      const raw = typeof body === 'string' ? Buffer.from(body) : body;
      const problem = jsonShapeProblem(raw, limits);
      if (problem) return done(refusal(problem));
      parse(req, body, (err, value) => {
        if (err) return done(err);
        if (mayHaveSurrogates(raw) && hasLoneSurrogate(value))
          return done(refusal('the body has a string with a lone surrogate (not valid Unicode)'));
        done(null, value);
      });
    };
  };
}
