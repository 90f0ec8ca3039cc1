/**
 * Full-text search on task names, the same on both databases. MariaDB/MySQL (InnoDB) index words
 * of 3 characters or more, leave out a short list of common English words, and keep `_` inside a
 * word; the SQLite index (FTS5) is set up to split words the same way, and the words of a search
 * are cut down to those both indexes hold. Case and accents do not count on either.
 */

/** InnoDB's default stop words: never indexed there, so never searched for here. */
const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a about an are as at be by com de en for from how i in is it la of on or that the this to ' +
    'was what when where who will with und www'
  ).split(' '),
);

/** Shortest word InnoDB indexes (its `innodb_ft_min_token_size` default). */
export const SEARCH_MIN_WORD = 3;
/** Most words one search looks for. */
export const SEARCH_MAX_WORDS = 8;

/**
 * The words of a search text that the name index can answer: letters, digits and `_`, lower
 * case, 3 characters or more, not a stop word, each once. Empty: nothing in it can be looked for.
 */
export function searchWords(text: string): string[] {
  const words = (text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []).filter(
    (w) => [...w].length >= SEARCH_MIN_WORD && !STOP_WORDS.has(w),
  );
  return [...new Set(words)].slice(0, SEARCH_MAX_WORDS);
}

/** MATCH ... AGAINST in boolean mode: every word, each as a word or the start of one. */
export const booleanModeQuery = (words: readonly string[]): string =>
  words.map((w) => `+${w}*`).join(' ');

/** FTS5 MATCH: every word as a prefix (implicit AND); words hold no quotes. */
export const fts5Query = (words: readonly string[]): string =>
  words.map((w) => `"${w}"*`).join(' ');
