import { Injectable, Logger } from '@nestjs/common';
import { ContractErrorCode, ContractException, validateDto } from '@baton/task-contract';
import { Clock, IdGenerator } from '../common';
import { CreateTaskDto, TasksService } from '../tasks';
import { placeholderPointers } from '../task-types';
import { CreateLogRuleDto, TestLogRuleDto, UpdateLogRuleDto } from './dto/log-rule.dto';
import { LogRecord, contentOfLine } from './log-record';
import { ruleTaskBody } from './rule-task';
import { invalid } from './checks';
import { LogRuleModel, tenantOfRule } from './log-rule.model';
import { LogRulesRepository } from './log-rules.repository';
import {
  BUILTIN_PLACEHOLDERS,
  MatchSpec,
  Matcher,
  compileMatcher,
  groupNamesOf,
  parseMatchSpec,
  placeholdersOf,
} from './rule-matcher';

/** How long the compiled enabled rules are reused before the database is read again. */
const CACHE_MS = 2000;

const SOURCE_PATTERN = /^(\*|(http|file|stream):(\*|[A-Za-z0-9._-]{1,64}))$/;

/** A rule ready to run: its matcher compiled once per load. */
export interface ActiveRule {
  rule: LogRuleModel;
  matcher: Matcher;
}

/** What a rule's test makes of a line. */
export interface LogRuleTest {
  /** The rule's match took the line. */
  matched: boolean;
  /** The rule reads the source the line was said to come from. */
  sourceApplies: boolean;
  /** The create-task body the LogDumper would send (matched only). */
  task: Record<string, unknown> | null;
  /** Why that task would be refused (a capture that makes a bad field...), or null. */
  taskError: string | null;
}

/** Where a tested line comes from unless the test says, and its place there. */
const TEST_SOURCE = 'http:test';
const TEST_POSITION = 'test';

function appliesTo(patterns: readonly string[], sourceId: string): boolean {
  const [kind] = sourceId.split(':', 1);
  return patterns.some((p) => p === '*' || p === sourceId || p === `${kind}:*`);
}

/**
 * The rules of LogDumper rules: a rule is checked whole before it is stored (sources, match,
 * template and its placeholders, and the template as a create body), so a stored rule can always
 * run; a bad one is refused with 400 and nothing is written.
 */
@Injectable()
export class LogRulesService {
  private readonly logger = new Logger('LogRules');
  /**
   * Every enabled rule, compiled, and when it was read: sources ask for their rules on every batch.
   * A change made through this instance drops it at once; one made through another instance is
   * seen within CACHE_MS.
   */
  private cache: { rules: Promise<ActiveRule[]>; at: number } | null = null;

  constructor(
    private readonly repo: LogRulesRepository,
    private readonly ids: IdGenerator,
    private readonly clock: Clock,
    private readonly tasks: TasksService,
  ) {}

  async create(dto: CreateLogRuleDto): Promise<LogRuleModel> {
    const rule = await this.build(dto);
    await this.repo.save(rule);
    this.cache = null;
    return rule;
  }

  /**
   * A rule as `create` would store it (checked the same way, refused with the same 400), tried on
   * one line through the LogDumper's own matcher and template filling; nothing is stored and no
   * task is made. The task it would make is checked as a create would check it.
   */
  async test(dto: TestLogRuleDto): Promise<LogRuleTest> {
    const rule = await this.build(dto.rule);
    const record: LogRecord = {
      sourceId: dto.source ?? TEST_SOURCE,
      position: TEST_POSITION,
      content: contentOfLine(dto.line),
    };
    const sourceApplies = appliesTo(rule.sources, record.sourceId);
    const lookup = compileMatcher(rule.match)(record.content);
    if (!lookup) return { matched: false, sourceApplies, task: null, taskError: null };
    const task = ruleTaskBody(rule, lookup, record);
    let taskError: string | null = null;
    try {
      await this.tasks.check(validateDto(CreateTaskDto, task));
    } catch (err) {
      // A refusal is what the LogDumper would count as rejected for this line; else a real fault.
      if (!(err instanceof ContractException) || err.httpStatus >= 500) throw err;
      taskError = err.message;
    }
    return { matched: true, sourceApplies, task, taskError };
  }

  private async build(dto: CreateLogRuleDto): Promise<LogRuleModel> {
    const now = this.clock.now();
    const rule = this.checked({
      ruleId: this.ids.taskId(),
      name: dto.name,
      sources: dto.sources ?? ['*'],
      match: parseMatchSpec(dto.match),
      template: dto.template,
      tenant: dto.tenant ?? null,
      enabled: dto.enabled ?? true,
      createdAt: now,
      updatedAt: now,
    });
    await this.checkRegistered(rule.template);
    return rule;
  }

  list(tenant?: string): Promise<LogRuleModel[]> {
    return this.repo.list(tenant);
  }

  async get(ruleId: string): Promise<LogRuleModel> {
    const rule = await this.repo.find(ruleId);
    if (!rule)
      throw new ContractException(
        ContractErrorCode.NOT_FOUND,
        `log rule ${ruleId} does not exist`,
        {
          rule_id: ruleId,
        },
      );
    return rule;
  }

  async update(ruleId: string, dto: UpdateLogRuleDto): Promise<LogRuleModel> {
    const current = await this.get(ruleId);
    const rule = this.checked({
      ...current,
      name: dto.name ?? current.name,
      sources: dto.sources ?? current.sources,
      match: dto.match ? parseMatchSpec(dto.match) : current.match,
      template: dto.template ?? current.template,
      enabled: dto.enabled ?? current.enabled,
      updatedAt: this.clock.now(),
    });
    if (dto.template) await this.checkRegistered(rule.template);
    await this.repo.save(rule);
    this.cache = null;
    return rule;
  }

  async remove(ruleId: string): Promise<void> {
    const removed = await this.repo.remove(ruleId);
    this.cache = null;
    if (!removed) await this.get(ruleId);
  }

  /**
   * The enabled rules that apply to a source, compiled. Records ingested for a tenant meet only
   * the rules of that tenant; others (file tails, streams, ingest without a tenant) only the rules
   * of no tenant, so a tenant's rule never reads another's logs.
   */
  async activeFor(sourceId: string, tenant?: string): Promise<ActiveRule[]> {
    return (await this.enabled()).filter(
      (a) =>
        appliesTo(a.rule.sources, sourceId) &&
        (tenant === undefined ? a.rule.tenant === null : tenantOfRule(a.rule) === tenant),
    );
  }

  private enabled(): Promise<ActiveRule[]> {
    const now = this.clock.now();
    const hit = this.cache;
    if (hit && now - hit.at >= 0 && now - hit.at < CACHE_MS) return hit.rules;
    const rules = this.repo.listEnabled().then((list) =>
      list.flatMap((rule) => {
        try {
          return [{ rule, matcher: compileMatcher(rule.match) }];
        } catch (err) {
          // A rule stored before regexes ran in RE2 may use what RE2 lacks (lookarounds,
          // backreferences): it matches nothing, and the other rules go on.
          this.logger.warn(
            `log rule ${rule.ruleId} (${rule.name}) is skipped: its regex does not compile in RE2 (${(err as Error).message}); change its match or disable it`,
          );
          return [];
        }
      }),
    );
    const entry = { rules, at: now };
    this.cache = entry;
    // A failed read is not kept: the next batch reads again.
    rules.catch(() => {
      if (this.cache === entry) this.cache = null;
    });
    return rules;
  }

  private checked(rule: LogRuleModel): LogRuleModel {
    // A stored match is checked again too (it may predate RE2); a rule being disabled need not
    // compile, so one that no longer does can be switched off.
    if (rule.enabled) parseMatchSpec(rule.match);
    for (const s of rule.sources) {
      if (!SOURCE_PATTERN.test(s))
        throw invalid(
          `sources: ${JSON.stringify(s)} is not *, http:<name>, file:<name> or stream:<name> (name may be *)`,
        );
    }
    this.checkTemplate(rule.match, rule.template);
    // A rule of one tenant makes tasks there only (its logs are that tenant's).
    if (rule.tenant !== null && rule.template.tenant !== rule.tenant) {
      if (rule.template.tenant !== undefined)
        throw invalid(
          `template.tenant must be the rule's tenant (${rule.tenant}), or left out to be set to it`,
        );
      return { ...rule, template: { ...rule.template, tenant: rule.tenant } };
    }
    return rule;
  }

  private checkTemplate(match: MatchSpec, template: Record<string, unknown>): void {
    if ('idempotency_key' in template)
      throw invalid(
        'template.idempotency_key is set by the LogDumper (source, position, rule): leave it out',
      );
    const used = placeholdersOf(template);
    const groups = groupNamesOf(match);
    if (groups) {
      const unknown = [...used].filter(
        (n) => !groups.has(n) && !(BUILTIN_PLACEHOLDERS as readonly string[]).includes(n),
      );
      if (unknown.length)
        throw invalid(
          `template uses {{${unknown.join('}}, {{')}}} but the regex has no such named group`,
        );
    }
    // The template with every placeholder filled must be a valid create body; a sample value
    // stands in for the captures (a record can still fill a field badly: that task is rejected).
    templateError(() => validateDto(CreateTaskDto, sampleOf(template)));
  }

  /**
   * A template that names its task type (and worker) as written, not from a capture, must create
   * a task today, as a timer's must: the type registered, `http_url` one of its workers, a
   * `callback_url` nowhere internal.
   */
  private async checkRegistered(template: Record<string, unknown>): Promise<void> {
    const info = (template.create_info ?? {}) as Record<string, unknown>;
    const captured = (v: unknown): boolean => typeof v === 'string' && v.includes('{{');
    if (captured(info.task_type) || captured(info.http_url)) return;
    const sample = validateDto(CreateTaskDto, sampleOf(template));
    // A param a capture fills is checked against the type's schema when the task is made.
    const holes = placeholderPointers(template.params);
    try {
      await this.tasks.check(sample, undefined, holes);
    } catch (err) {
      templateError(() => {
        throw err;
      });
    }
  }
}

/** A template with every placeholder filled with a sample value. */
function sampleOf(template: Record<string, unknown>): unknown {
  return JSON.parse(JSON.stringify(template).replace(/\{\{\s*[A-Za-z_$][\w$.-]*\s*\}\}/g, 'x'));
}

/** Runs a check of the template, naming the template in a refusal. */
function templateError<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof ContractException)
      throw new ContractException(err.code, `template: ${err.message}`, err.data);
    throw err;
  }
}
