import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { LogRuleEntity } from './log-rule.entity';
import { LogRuleModel, tenantOfRule } from './log-rule.model';
import { MatchSpec } from './rule-matcher';

const toModel = (e: LogRuleEntity): LogRuleModel => ({
  ruleId: e.rule_id,
  name: e.name,
  sources: e.sources,
  match: e.match_spec as MatchSpec,
  template: e.template,
  tenant: e.tenant ?? null,
  enabled: Boolean(e.enabled),
  createdAt: e.created_at,
  updatedAt: e.updated_at,
});

const toEntity = (m: LogRuleModel): LogRuleEntity => ({
  rule_id: m.ruleId,
  name: m.name,
  sources: m.sources,
  match_spec: m.match as Record<string, unknown>,
  template: m.template,
  tenant: m.tenant,
  enabled: m.enabled,
  created_at: m.createdAt,
  updated_at: m.updatedAt,
});

/** Storage of LogDumper rules. */
@Injectable()
export class LogRulesRepository {
  constructor(private readonly db: DataSource) {}

  /** Every rule, or one tenant's (the tenant of its template: a config table, filtered here). */
  async list(tenant?: string): Promise<LogRuleModel[]> {
    const all = (await this.db.manager.find(LogRuleEntity, { order: { rule_id: 'ASC' } })).map(
      toModel,
    );
    return tenant === undefined ? all : all.filter((r) => tenantOfRule(r) === tenant);
  }

  async listEnabled(): Promise<LogRuleModel[]> {
    return (
      await this.db.manager.find(LogRuleEntity, {
        where: { enabled: true },
        order: { rule_id: 'ASC' },
      })
    ).map(toModel);
  }

  async find(ruleId: string): Promise<LogRuleModel | undefined> {
    const e = await this.db.manager.findOneBy(LogRuleEntity, { rule_id: ruleId });
    return e ? toModel(e) : undefined;
  }

  /** Inserts or replaces the whole rule (one statement: nothing half-written). */
  async save(m: LogRuleModel): Promise<void> {
    await this.db.manager.save(LogRuleEntity, toEntity(m));
  }

  /** True when a rule was deleted. */
  async remove(ruleId: string): Promise<boolean> {
    const r = await this.db.manager.delete(LogRuleEntity, { rule_id: ruleId });
    return (r.affected ?? 0) > 0;
  }
}
