import { LockState } from './lock-provider.interface';

/** The state of a key nobody holds. */
export function freeState(key: string): LockState {
  return { key, held: false, holder: null, token: null, fence: null, expiresAt: null };
}

/**
 * A holding's token and label written as one value (`<token> <label>`, or the token alone when
 * no label was given): tokens have no space, so the first one splits them.
 */
export function tokenWithLabel(token: string, label: string | undefined): string {
  return label === undefined ? token : `${token} ${label}`;
}

/** Splits what `tokenWithLabel` wrote. */
export function splitTokenAndLabel(value: string): { token: string; label: string | null } {
  const space = value.indexOf(' ');
  return space < 0
    ? { token: value, label: null }
    : { token: value.slice(0, space), label: value.slice(space + 1) };
}
