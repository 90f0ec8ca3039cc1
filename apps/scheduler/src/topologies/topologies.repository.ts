import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { TransactionRunner } from '../database';
import { isUniqueViolation } from '../task-store';
import { TopologySpec } from './topology-definition';
import { TopologyEntity } from './topology.entities';

/** One stored version of a definition. */
export interface TopologyVersion {
  name: string;
  version: number;
  tenant: string | null;
  spec: TopologySpec;
  createdBy: string;
  createdAt: number;
}

const toModel = (e: TopologyEntity): TopologyVersion => ({
  name: e.name,
  version: e.version,
  tenant: e.tenant,
  spec: e.spec,
  createdBy: e.created_by,
  createdAt: e.created_at,
});

/**
 * Definitions, one row per version. A version never changes once written, so versions read are
 * kept in memory (runs read theirs on every evaluation).
 */
@Injectable()
export class TopologiesRepository {
  private readonly versions = new Map<string, TopologyVersion>();

  constructor(
    private readonly db: DataSource,
    private readonly tx: TransactionRunner,
  ) {}

  /** Stores the spec as the next version of its name (1 for a new name). */
  async save(
    spec: TopologySpec,
    tenant: string | null,
    by: string,
    now: number,
  ): Promise<TopologyVersion> {
    for (let tries = 0; ; tries++) {
      try {
        return await this.tx.run(async (m) => {
          const top = await m
            .createQueryBuilder(TopologyEntity, 't')
            .select('MAX(t.version)', 'v')
            .where('t.name = :name', { name: spec.name })
            .getRawOne<{ v: number | string | null }>();
          const row: TopologyEntity = {
            name: spec.name,
            version: Number(top?.v ?? 0) + 1,
            tenant,
            spec,
            created_by: by,
            created_at: now,
          };
          await m.insert(TopologyEntity, row as never);
          return toModel(row);
        });
      } catch (err) {
        // Two saves of one name raced for a version number: the loser takes the next.
        if (tries < 3 && isUniqueViolation(err)) continue;
        throw err;
      }
    }
  }

  /** A version, or the newest when none is given. */
  async get(name: string, version?: number): Promise<TopologyVersion | undefined> {
    if (version !== undefined) {
      const known = this.versions.get(`${name}@${version}`);
      if (known) return known;
      const e = await this.db.manager.findOneBy(TopologyEntity, { name, version });
      if (!e) return undefined;
      const model = toModel(e);
      if (this.versions.size > 1000) this.versions.clear();
      this.versions.set(`${name}@${version}`, model);
      return model;
    }
    const e = await this.db.manager.findOne(TopologyEntity, {
      where: { name },
      order: { version: 'DESC' },
    });
    return e ? toModel(e) : undefined;
  }

  /** The newest version of every definition (of a tenant's and the shared ones, when given). */
  async latest(tenant?: string): Promise<TopologyVersion[]> {
    const q = this.db.manager
      .createQueryBuilder(TopologyEntity, 't')
      .where('t.version = (SELECT MAX(v.version) FROM baton_topology v WHERE v.name = t.name)')
      .orderBy('t.name', 'ASC');
    if (tenant !== undefined) q.andWhere('(t.tenant = :tenant OR t.tenant IS NULL)', { tenant });
    return (await q.getMany()).map(toModel);
  }

  /** Every version of a name, newest first (without their specs' bodies read twice). */
  async history(name: string): Promise<TopologyVersion[]> {
    const rows = await this.db.manager.find(TopologyEntity, {
      where: { name },
      order: { version: 'DESC' },
    });
    return rows.map(toModel);
  }

  /** The names of every definition. */
  async names(): Promise<Set<string>> {
    const rows = await this.db.manager
      .createQueryBuilder(TopologyEntity, 't')
      .select('DISTINCT t.name', 'name')
      .getRawMany<{ name: string }>();
    return new Set(rows.map((r) => r.name));
  }
}
