import { ApiKeyEntity } from './api-key.entity';
import { AuditEntryEntity } from './audit-entry.entity';

export * from './access';
export * from './api-keys.service';
export { Audited } from './audit';
export * from './auth.module';
export { looksLikeJwt } from './jwt-verifier';
export { OidcTokensService } from './oidc-tokens.service';
export * from './tenant-scope';

/** The tables this module owns, for the data source. */
export const AUTH_ENTITIES = [ApiKeyEntity, AuditEntryEntity];
