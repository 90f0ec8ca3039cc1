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
  enabled: boolean;
  createdAt: number;
  updatedAt: number;
}

/** The tenant a rule makes tasks in, and so the one it belongs to. */
export function tenantOfRule(rule: Pick<LogRuleModel, 'template'>): string {
  const { tenant } = rule.template;
  return typeof tenant === 'string' ? tenant : 'default';
}
