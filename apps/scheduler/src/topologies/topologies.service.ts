import { Injectable } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { Clock } from '../common';
import { TaskTypeModel, TaskTypesService } from '../task-types';
import { DefinitionContext } from './node-kinds/node-def';
import { TopologySpec, parseDefinition } from './topology-definition';
import { TopologiesRepository, TopologyVersion } from './topologies.repository';

export const topologyNotFound = (name: string, version?: number): ContractException =>
  new ContractException(
    ContractErrorCode.NOT_FOUND,
    version === undefined
      ? `topology ${name} does not exist`
      : `topology ${name} has no version ${version}`,
    { name, ...(version !== undefined ? { version } : {}) },
  );

/** Definitions: checked when saved, a new version on every save, never edited. */
@Injectable()
export class TopologiesService {
  constructor(
    private readonly repo: TopologiesRepository,
    private readonly types: TaskTypesService,
    private readonly clock: Clock,
  ) {}

  /**
   * Checks a definition and stores it as the next version of its name. A body equal to the newest
   * version stores nothing and answers that version (applying the same file again is a no-op).
   */
  async save(
    body: unknown,
    tenant: string | null,
    by: string,
  ): Promise<{ version: TopologyVersion; created: boolean }> {
    const [types, names] = await Promise.all([this.types.list(), this.repo.names()]);
    const name = (body as { name?: unknown } | null)?.name;
    if (typeof name === 'string') names.add(name); // a definition may run itself (depth-bounded)
    const spec = parseDefinition(body, this.contextOf(types, names));
    const newest = await this.repo.get(spec.name);
    if (newest && newest.tenant !== tenant)
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        newest.tenant === null
          ? `topology ${spec.name} is shared by every tenant: a key of one tenant cannot change it`
          : `topology ${spec.name} is taken: choose another name`,
        { name: spec.name },
      );
    if (newest && JSON.stringify(newest.spec) === JSON.stringify(spec))
      return { version: newest, created: false };
    return { version: await this.repo.save(spec, tenant, by, this.clock.now()), created: true };
  }

  /** Checks a definition as `save` would, storing nothing. */
  async check(body: unknown): Promise<TopologySpec> {
    const [types, names] = await Promise.all([this.types.list(), this.repo.names()]);
    const name = (body as { name?: unknown } | null)?.name;
    if (typeof name === 'string') names.add(name);
    return parseDefinition(body, this.contextOf(types, names));
  }

  /** What a definition is checked against: the registered types (and their schemas), the names. */
  private contextOf(types: TaskTypeModel[], names: ReadonlySet<string>): DefinitionContext {
    const byName = new Map(types.map((t) => [t.taskType, t]));
    return {
      taskTypes: new Set(byName.keys()),
      topologies: names,
      checkParams: (taskType, params, holes) => {
        const type = byName.get(taskType);
        if (type) this.types.checkParams(type, params, '/task/params', holes);
      },
    };
  }

  async get(name: string, version?: number): Promise<TopologyVersion> {
    const found = await this.repo.get(name, version);
    if (!found) throw topologyNotFound(name, version);
    return found;
  }

  list(tenant?: string): Promise<TopologyVersion[]> {
    return this.repo.latest(tenant);
  }

  async history(name: string): Promise<TopologyVersion[]> {
    const all = await this.repo.history(name);
    if (all.length === 0) throw topologyNotFound(name);
    return all;
  }
}
