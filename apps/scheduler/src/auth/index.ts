import { ApiKeyEntity } from './api-key.entity';

export * from './access';
export * from './api-keys.service';
export * from './auth.module';

/** The tables this module owns, for the data source. */
export const AUTH_ENTITIES = [ApiKeyEntity];
