import type { TriggerRule } from '../node-kinds';

/**
 * Airflow's trigger-rule table, written out from its documentation, not from Baton's code: for
 * two parents' end states, whether the node runs (r), is skipped (k) or is not run because of a
 * failure (u). The evaluator's unit test and the semantics table against a real scheduler both
 * read it, so the two cannot drift apart.
 */

/** Two parents' end states: S success, F failed, K skipped, U upstream-failed. */
export const PARENT_PAIRS = ['SS', 'SF', 'SK', 'SU', 'FF', 'FK', 'FU', 'KK', 'KU', 'UU'] as const;
export type ParentPair = (typeof PARENT_PAIRS)[number];

export const PARENT_STATE = {
  S: 'SUCCESS',
  F: 'FAILED',
  K: 'SKIPPED',
  U: 'UPSTREAM_FAILED',
} as const;

/** Each rule's verdict over PARENT_PAIRS, in their order. */
export const RULE_TABLE: Record<TriggerRule, string> = {
  all_success: 'r u k u u u u k u u',
  all_failed: 'k k k k r k r k k r',
  all_done: 'r r r r r r r r r r',
  all_skipped: 'k k k k k k k r k k',
  one_success: 'r r r r u u u k u u',
  one_failed: 'k r k r r r r k r r',
  // Airflow's code counts only success and failed for one_done; Baton counts UPSTREAM_FAILED as
  // failed in every rule (docs/topologies.md).
  one_done: 'r r r r r r r k r r',
  none_failed: 'r u r u u u u r u u',
  none_failed_min_one_success: 'r u r u u u u k u u',
  none_skipped: 'r r k r r k r k k r',
  always: 'r r r r r r r r r r',
};

export type RuleCode = 'r' | 'k' | 'u';

/** The verdict code of `rule` after the parents of `pair`. */
export const expectedCode = (rule: TriggerRule, pair: ParentPair): RuleCode =>
  RULE_TABLE[rule].split(' ')[PARENT_PAIRS.indexOf(pair)] as RuleCode;
