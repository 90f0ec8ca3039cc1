import {
  ExecutionContext,
  SetMetadata,
  applyDecorators,
  createParamDecorator,
} from '@nestjs/common';
import { ApiBearerAuth } from '@nestjs/swagger';

/** The roles of API keys, each allowed what the one before it is, and more. */
export const ROLES = ['viewer', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/**
 * Who may call a route:
 * - `read`: every key (viewer and up): reading tasks, timers, rules, workers, types, tenants;
 * - `operate`: operator and admin: creating and acting on tasks, timers, log rules, log ingest;
 * - `admin`: admin only: task types, tenants' limits, API keys;
 * - `worker`: no API key: signed by a worker (HMAC, checked by the route's own guard);
 * - `public`: no credentials: health probes and metrics.
 */
export type AccessRule = 'read' | 'operate' | 'admin' | 'worker' | 'public';

export const ACCESS = 'baton:access';

/** The OpenAPI security scheme of API keys (`Authorization: Bearer <key>`). */
export const API_KEY_SCHEME = 'api-key';

/**
 * The rule of a controller or of one of its routes (the route's wins). Every route needs one.
 * Rules that take a key also say so in the OpenAPI document.
 */
export const Access = (rule: AccessRule): MethodDecorator & ClassDecorator =>
  rule === 'worker' || rule === 'public'
    ? SetMetadata(ACCESS, rule)
    : applyDecorators(SetMetadata(ACCESS, rule), ApiBearerAuth(API_KEY_SCHEME));

const NEEDS: Record<'read' | 'operate' | 'admin', Role> = {
  read: 'viewer',
  operate: 'operator',
  admin: 'admin',
};

/** Whether a key of `role` may call a route under `rule`. */
export function allows(role: Role, rule: 'read' | 'operate' | 'admin'): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(NEEDS[rule]);
}

/** Who is calling, as the API-key guard found them; set on the request. */
export interface Principal {
  keyId: string | null;
  name: string;
  role: Role;
  /** The only tenant the caller may see and touch; null: all. */
  tenant: string | null;
  /** A person signed in at the identity provider (their email, or `sub`); absent for a key. */
  user?: string;
}

/**
 * The lifecycle and audit logs' name of a caller: `user:<email>` for a person signed in,
 * `key:<name>` for an API key, or `api` with the API open.
 */
export function actorOf(principal: Principal | undefined): string {
  if (principal?.user) return `user:${principal.user}`;
  return principal?.keyId ? `key:${principal.name}` : 'api';
}

/** A handler parameter: who made the request (`key:<name>`), for the lifecycle and audit logs. */
export const Actor = createParamDecorator((_: unknown, ctx: ExecutionContext): string =>
  actorOf(ctx.switchToHttp().getRequest<{ principal?: Principal }>().principal),
);

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The token of an `Authorization: Bearer <token>` header, if it is one. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined;
}

/** A handler parameter: who is calling (undefined while the API is open, without keys). */
export const Caller = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): Principal | undefined =>
    ctx.switchToHttp().getRequest<{ principal?: Principal }>().principal,
);

/** A handler parameter: the only tenant the caller may see (a tenant key's), or null for all. */
export const CallerTenant = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): string | null =>
    ctx.switchToHttp().getRequest<{ principal?: Principal }>().principal?.tenant ?? null,
);
