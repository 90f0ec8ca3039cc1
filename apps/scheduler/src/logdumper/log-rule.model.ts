import { MatchSpec } from './rule-matcher';

/** A rule as services see it: which sources, what to match, and the create-task body to fill. */
export interface LogRuleModel {
  ruleId: string;
  name: string;
  /** Source patterns like `file:app`, `http:*`, `*`; a rule applies where one of them matches. */
  sources: string[];
  match: MatchSpec;
  /** A create-task body (POST /v1/tasks) whose string values may hold `{{placeholders}}`. */
  template: Record<string, unknown>;
  /**
   * The one tenant whose logs the rule reads (batches ingested for it), and in which it makes
   * tasks; null: every log (a rule made without a tenant, by an admin).
   */
  tenant: string | null;
  enabled: boolean;
  createdAt: number;
  updatedAt: number;
}

/** The tenant a rule belongs to: its own, else the one its template makes tasks in. */
export function tenantOfRule(rule: Pick<LogRuleModel, 'template' | 'tenant'>): string {
  if (rule.tenant !== null) return rule.tenant;
  const { tenant } = rule.template;
  return typeof tenant === 'string' ? tenant : 'default';
}
