import { Module } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { ApiKeyGuard } from './api-key.guard';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysService } from './api-keys.service';
import { AuditInterceptor, AuditLog } from './audit';
import { AuditController } from './audit.controller';
import { OidcTokensService } from './oidc-tokens.service';
import { TenantScopes } from './tenant-scope';

/**
 * Who may call the public API (API keys and their roles, or people's access tokens from the
 * identity provider, checked by one global guard), and what
 * they changed (the audit log, written by one global interceptor for `@Audited` routes).
 */
@Module({
  controllers: [ApiKeysController, AuditController],
  providers: [
    ApiKeysService,
    OidcTokensService,
    AuditLog,
    TenantScopes,
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    { provide: APP_INTERCEPTOR, useClass: AuditInterceptor },
  ],
  exports: [ApiKeysService, OidcTokensService, TenantScopes],
})
export class AuthModule {}
