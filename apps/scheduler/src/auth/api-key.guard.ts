import { CanActivate, ExecutionContext, Inject, Injectable, Logger } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { ACCESS, AccessRule, Principal, allows, bearerToken } from './access';
import { ApiKeysService } from './api-keys.service';
import { looksLikeJwt } from './jwt-verifier';
import { OidcTokensService } from './oidc-tokens.service';
import { ALL_TENANTS, TENANT_FIELDS, TenantScopes } from './tenant-scope';

const OPEN: Principal = { keyId: null, name: 'api', role: 'admin', tenant: null };

type RequestLike = {
  headers: Record<string, string | string[] | undefined>;
  params?: unknown;
  body?: unknown;
  query?: unknown;
  principal?: Principal;
};

/**
 * The one place the public API decides who may call what: every route carries an `@Access` rule
 * (a route without one is refused, so a new route cannot slip through open), and a key's role
 * must reach it. Workers' routes (`worker`) are left to their HMAC guard; probes and metrics
 * (`public`) need nothing. The caller is put on the request as `principal`. A key of one tenant
 * is then held to it here too (TenantScopes): other tenants' ids answer 404, tenant fields that
 * name another tenant 403, and routes over every tenant refuse it.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly logger = new Logger('ApiKeyGuard');

  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysService,
    private readonly oidc: OidcTokensService,
    private readonly scopes: TenantScopes,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const rule = this.reflector.getAllAndOverride<AccessRule | undefined>(ACCESS, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (rule === 'public' || rule === 'worker') return true;
    const req = context.switchToHttp().getRequest<RequestLike>();
    if (rule === undefined) {
      this.logger.error(
        `${context.getClass().name}.${context.getHandler().name} has no @Access rule: refused`,
      );
      throw new ContractException(ContractErrorCode.FORBIDDEN, 'this route has no access rule');
    }
    if (this.config.apiAuth.mode === 'off') {
      req.principal = OPEN;
      return true;
    }
    const header = req.headers.authorization;
    const token = bearerToken(header);
    if (!token)
      throw new ContractException(
        ContractErrorCode.UNAUTHENTICATED,
        this.oidc.enabled
          ? 'an API key or a sign-in is required: send Authorization: Bearer <key or access token>'
          : 'an API key is required: send Authorization: Bearer <key>',
      );
    const found = await this.principalOf(token);
    if (typeof found === 'string')
      throw new ContractException(ContractErrorCode.UNAUTHENTICATED, found);
    if (!allows(found.role, rule))
      throw new ContractException(
        ContractErrorCode.FORBIDDEN,
        `${found.user ? found.user : `API key ${found.name}`} (${found.role}) may not do this: it needs ${rule === 'read' ? 'viewer' : rule === 'operate' ? 'operator' : 'admin'}`,
        { role: found.role },
      );
    req.principal = found;
    if (found.tenant !== null) await this.holdToTenant(context, found.tenant, req);
    return true;
  }

  /**
   * A JWT is a person's access token (when an identity provider is set up); anything else, and a
   * key that merely looks like a JWT, an API key.
   */
  private async principalOf(token: string): Promise<Principal | string> {
    if (!this.oidc.enabled || !looksLikeJwt(token)) return this.keys.verify(token);
    const person = await this.oidc.verify(token);
    if (typeof person !== 'string') return person;
    const key = await this.keys.verify(token);
    return typeof key === 'string' ? person : key;
  }

  private async holdToTenant(
    context: ExecutionContext,
    tenant: string,
    req: RequestLike,
  ): Promise<void> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean | undefined>(ALL_TENANTS, targets))
      throw new ContractException(
        ContractErrorCode.FORBIDDEN,
        `this route shows every tenant's data; a key of tenant ${tenant} may not use it`,
      );
    const fields = this.reflector.getAllAndOverride<string[] | undefined>(TENANT_FIELDS, targets);
    await this.scopes.enforce(tenant, req, fields ?? []);
  }
}
