import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { DataSource, IsNull } from 'typeorm';
import { Clock, IdGenerator, TENANT_PATTERN } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { Principal, ROLES, Role } from './access';
import { ApiKeyEntity } from './api-key.entity';

/** How long a verified key is trusted before it is read again (a revocation elsewhere lands within it). */
const VERIFIED_MS = 1000;
/** last_used_at is written at most this often per key. */
const USED_WRITE_MS = 60_000;
const NAME = /^[A-Za-z0-9][A-Za-z0-9 ._@:-]{0,99}$/;
const ENV_KEY_NAME = 'admin (BATON_ADMIN_KEY)';

const hashOf = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/** A new secret: `baton_` and 32 characters of base64url (192 random bits). */
function newSecret(): string {
  return `baton_${randomBytes(24).toString('base64url')}`;
}

export interface NewApiKey {
  name: string;
  role: Role;
  tenant?: string | null;
  expiresAt?: number | null;
}

function invalid(message: string): ContractException {
  return new ContractException(ContractErrorCode.VALIDATION_FAILED, message);
}

/**
 * API keys: made with a role, shown once, kept as a SHA-256, revocable.
 * On start: `BATON_ADMIN_KEY` is made sure of, or an empty table gets a first admin key, printed
 * once; with `BATON_API_AUTH=off` a warning says the API is open.
 */
@Injectable()
export class ApiKeysService implements OnApplicationBootstrap {
  private readonly logger = new Logger('ApiKeys');
  private readonly verified = new Map<
    string,
    { principal: Principal; at: number; expiresAt: number | null }
  >();
  private readonly usedWritten = new Map<string, number>();

  constructor(
    private readonly db: DataSource,
    private readonly ids: IdGenerator,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  private get repo() {
    return this.db.getRepository(ApiKeyEntity);
  }

  async onApplicationBootstrap(): Promise<void> {
    const { mode, adminKey } = this.config.apiAuth;
    if (mode === 'off') {
      this.logger.warn(
        'BATON_API_AUTH=off: the public API takes every request without a key, as an admin. For local experiments only.',
      );
      return;
    }
    if (adminKey) {
      await this.ensureEnvKey(adminKey);
      return;
    }
    if ((await this.repo.count()) > 0) return;
    const made = await this.create({ name: 'admin', role: 'admin' }).catch(() => undefined);
    // Another instance starting on the same empty database may have made it first.
    if (made)
      this.logger.warn(
        `the first admin API key, shown once (keep it; make others with POST /v1/api-keys): ${made.secret}`,
      );
  }

  /** A new key and its secret (the only time the secret is seen). */
  async create(input: NewApiKey): Promise<{ key: ApiKeyEntity; secret: string }> {
    if (!NAME.test(input.name))
      throw invalid('name must be 1-100 characters of letters, digits, space and ._@:-');
    if (!(ROLES as readonly string[]).includes(input.role))
      throw invalid(`role must be one of ${ROLES.join(', ')}`);
    if (input.tenant !== undefined && input.tenant !== null && !TENANT_PATTERN.test(input.tenant))
      throw invalid('tenant must be a lower-case name');
    if (input.tenant && input.role === 'admin')
      throw invalid(
        'an admin key spans every tenant (task types, workers and keys are shared): make a viewer or operator key for one tenant',
      );
    const now = this.clock.now();
    if (input.expiresAt !== undefined && input.expiresAt !== null && input.expiresAt <= now)
      throw invalid('expires_at must be in the future');
    if (await this.repo.findOneBy({ name: input.name }))
      throw new ContractException(
        ContractErrorCode.CREATE_CONFLICT,
        `an API key named ${input.name} exists already`,
        { name: input.name },
      );
    const secret = newSecret();
    const key: ApiKeyEntity = {
      key_id: this.ids.taskId(),
      name: input.name,
      role: input.role,
      tenant: input.tenant ?? null,
      prefix: secret.slice(0, 12),
      key_hash: hashOf(secret),
      created_at: now,
      expires_at: input.expiresAt ?? null,
      revoked_at: null,
      last_used_at: null,
    };
    await this.repo.insert(key);
    return { key, secret };
  }

  list(): Promise<ApiKeyEntity[]> {
    return this.repo.find({ order: { created_at: 'ASC' } });
  }

  /** Revokes a key: refused from the next request on (at once here, within a second elsewhere). */
  async revoke(keyId: string): Promise<ApiKeyEntity> {
    const key = await this.repo.findOneBy({ key_id: keyId });
    if (!key)
      throw new ContractException(ContractErrorCode.NOT_FOUND, `API key ${keyId} does not exist`, {
        key_id: keyId,
      });
    if (key.revoked_at === null) {
      key.revoked_at = this.clock.now();
      await this.repo.update(
        { key_id: keyId, revoked_at: IsNull() },
        { revoked_at: key.revoked_at },
      );
    }
    this.verified.clear();
    return key;
  }

  /** The caller a bearer secret stands for, or why it is refused. */
  async verify(secret: string): Promise<Principal | string> {
    const now = this.clock.now();
    const hash = hashOf(secret);
    const hit = this.verified.get(hash);
    if (hit && now - hit.at < VERIFIED_MS && (hit.expiresAt === null || hit.expiresAt > now))
      return hit.principal;
    const key = await this.repo.findOneBy({ key_hash: hash });
    if (!key) return 'unknown API key';
    if (key.revoked_at !== null) return `API key ${key.name} was revoked`;
    if (key.expires_at !== null && key.expires_at <= now) return `API key ${key.name} has expired`;
    const principal: Principal = {
      keyId: key.key_id,
      name: key.name,
      role: key.role as Role,
      tenant: key.tenant,
    };
    this.verified.set(hash, { principal, at: now, expiresAt: key.expires_at });
    if (this.verified.size > 10_000) this.verified.clear();
    this.noteUse(key.key_id, now);
    return principal;
  }

  private noteUse(keyId: string, now: number): void {
    if (now - (this.usedWritten.get(keyId) ?? 0) < USED_WRITE_MS) return;
    this.usedWritten.set(keyId, now);
    this.repo.update({ key_id: keyId }, { last_used_at: now }).catch((err: unknown) => {
      this.logger.warn(`could not note the use of API key ${keyId}: ${String(err)}`);
    });
  }

  /**
   * BATON_ADMIN_KEY is an admin key: made, or made current when the setting holds a new secret
   * (which replaces the old one). A revoked one is never brought back.
   */
  private async ensureEnvKey(secret: string): Promise<void> {
    const hash = hashOf(secret);
    const existing = await this.repo.findOneBy({ name: ENV_KEY_NAME });
    if (existing?.key_hash === hash) {
      // Revoked stays revoked: a leaked key does not come back with the next deploy.
      if (existing.revoked_at !== null)
        this.logger.warn(
          'BATON_ADMIN_KEY was revoked through the API and stays refused: set a new one to replace it',
        );
      return;
    }
    const row = {
      role: 'admin',
      tenant: null,
      prefix: secret.slice(0, 12),
      key_hash: hash,
      revoked_at: null,
      expires_at: null,
    };
    if (existing) await this.repo.update({ key_id: existing.key_id }, row);
    else
      await this.repo
        .insert({
          key_id: this.ids.taskId(),
          name: ENV_KEY_NAME,
          created_at: this.clock.now(),
          last_used_at: null,
          ...row,
        })
        // Another instance starting with the same setting made it meanwhile.
        .catch(async (err: unknown) => {
          if ((await this.repo.findOneBy({ key_hash: hash })) === null) throw err;
        });
  }
}
