import { Injectable, SetMetadata } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';

/**
 * Where a route takes a tenant name (`body.tenant`, `body.tasks.*.tenant`, `query.tenant`, ...).
 * For a tenant-scoped key, a missing one is set to the key's tenant and another one is refused
 * (403); for other keys it is left as sent.
 */
export const TENANT_FIELDS = 'baton:tenant-fields';
export const TenantFields = (...paths: string[]): MethodDecorator =>
  SetMetadata(TENANT_FIELDS, paths);

/** A route over every tenant's data (fleet internals): refused to tenant-scoped keys. */
export const ALL_TENANTS = 'baton:all-tenants';
export const AllTenants = (): MethodDecorator & ClassDecorator => SetMetadata(ALL_TENANTS, true);

/** What `TenantOf` answers for a resource every tenant may reach (a shared topology definition). */
export const ANY_TENANT = Symbol('any tenant');

/**
 * Finds the tenant of the resource a route parameter names; undefined: no such resource;
 * ANY_TENANT: a shared one.
 */
export type TenantOf = (id: string) => Promise<string | typeof ANY_TENANT | undefined>;

interface Owned {
  tenantOf: TenantOf;
  /** The answer to an id that does not exist: a foreign one gets the very same. */
  notFound: (id: string) => ContractException;
}

/**
 * Route parameters that name something every tenant sees alike: task types, workers, and API keys
 * (whose routes are for admins, and admin keys span every tenant); and a node's key or an
 * attempt's number, which name nothing by themselves (their run or task, `{run_id}` or
 * `{task_id}` on the same route, is the tenant's).
 */
const SHARED_PARAMS = new Set(['task_type', 'worker_id', 'key_id', 'node', 'attempt']);

/**
 * The route parameters the API knows, and what each says about tenants: the id of a resource of
 * one tenant (tasks, timers, log rules, tenants; the module of each registers it), or the name
 * of something shared (SHARED_PARAMS). A parameter that is neither refuses tenant-scoped keys, so
 * a new kind of resource is closed to them until it says whose it is.
 */
@Injectable()
export class TenantScopes {
  private readonly owned = new Map<string, Owned>();

  /** `param` names a resource of one tenant; `tenantOf` finds which. */
  owns(param: string, tenantOf: TenantOf, notFound: (id: string) => ContractException): void {
    this.owned.set(param, { tenantOf, notFound });
  }

  /**
   * Refuses what a key of `tenant` may not reach on this route: a resource of another tenant
   * (the same 404 as one that does not exist, so ids cannot be probed), or a tenant field that
   * names another tenant (403). Missing tenant fields are set to the key's tenant.
   */
  async enforce(
    tenant: string,
    req: { params?: unknown; body?: unknown; query?: unknown },
    fields: readonly string[],
  ): Promise<void> {
    const params = (req.params ?? {}) as Record<string, string>;
    for (const [param, id] of Object.entries(params)) {
      if (SHARED_PARAMS.has(param)) continue;
      const owned = this.owned.get(param);
      if (!owned)
        throw new ContractException(
          ContractErrorCode.FORBIDDEN,
          `a key of tenant ${tenant} may not use this route: its {${param}} is not known to belong to a tenant`,
        );
      const owner = await owned.tenantOf(id);
      if (owner !== ANY_TENANT && owner !== tenant) throw owned.notFound(id);
    }
    for (const path of fields) {
      const [root, ...rest] = path.split('.');
      const top = root === 'body' ? req.body : root === 'query' ? req.query : undefined;
      for (const { holder, key } of holders(top, rest, tenant, path)) {
        const value = holder[key];
        if (value === undefined) holder[key] = tenant;
        else if (value !== tenant)
          throw new ContractException(
            ContractErrorCode.FORBIDDEN,
            `a key of tenant ${tenant} works in tenant ${tenant} only; ${JSON.stringify(value)} is another`,
            { tenant: value },
          );
      }
    }
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The objects a path reaches and the key to look at in each (`*` walks an array). Where the path
 * is absent there is nothing to hold; where it meets something else than the object or array it
 * expects, the request is refused here rather than trusted to fail validation later.
 */
function holders(
  value: unknown,
  path: readonly string[],
  tenant: string,
  field: string,
): { holder: Record<string, unknown>; key: string }[] {
  if (value === undefined) return [];
  const [head, ...rest] = path;
  const expected = head === '*' ? Array.isArray(value) : isObject(value);
  if (!expected)
    throw new ContractException(
      ContractErrorCode.FORBIDDEN,
      `a key of tenant ${tenant} must send ${field} in a JSON ${head === '*' ? 'array' : 'object'}`,
    );
  if (rest.length === 0) return [{ holder: value as Record<string, unknown>, key: head }];
  if (head === '*') return (value as unknown[]).flatMap((v) => holders(v, rest, tenant, field));
  return holders((value as Record<string, unknown>)[head], rest, tenant, field);
}
