import { ContractErrorCode, ContractException } from '@baton/task-contract';

/** A node key (and a signal name): a letter, then letters, digits, "_" and "-". */
export const KEY = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/** A refusal of a definition, naming the node at fault when there is one. */
export const bad = (message: string, node?: string): ContractException =>
  new ContractException(
    ContractErrorCode.VALIDATION_FAILED,
    node ? `node ${node}: ${message}` : message,
    node ? { node } : {},
  );

export const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

export const strings = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((x) => typeof x === 'string');
