import { LogRecord, idempotencyKeyOf } from './log-record';
import { LogRuleModel } from './log-rule.model';
import { Lookup, fillTemplate } from './rule-matcher';

/**
 * The create-task body a rule makes from a record it matched: its template filled from the
 * captures and the built-ins, keyed by the record's place in its source, labelled with the rule
 * and the source. The LogDumper and a rule's test (`POST /v1/log-rules/test`) both use this.
 */
export function ruleTaskBody(
  rule: LogRuleModel,
  lookup: Lookup,
  record: LogRecord,
): Record<string, unknown> {
  const builtins: Record<string, string> = {
    _line: record.content.text,
    _source: record.sourceId,
    _position: record.position,
  };
  const filled = fillTemplate(rule.template, (name) =>
    name in builtins ? builtins[name] : lookup(name),
  );
  return {
    ...filled,
    idempotency_key: idempotencyKeyOf(record, rule.ruleId),
    // Labels let people (and tests) find what a rule or a source produced.
    labels: {
      ...(filled.labels as Record<string, unknown> | undefined),
      log_rule: rule.ruleId,
      log_source: record.sourceId,
    },
  };
}
