import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ContractErrorCode, Envelope, ok } from '@baton/task-contract';
import { ApiErrors } from '../common';
import { Access } from './access';
import { Audited } from './audit';
import { ApiKeysService } from './api-keys.service';
import { ApiKeyDto, CreateApiKeyDto, NewApiKeyDto, toApiKeyDto } from './dto/api-key.dto';

@ApiTags('api-keys')
@Access('admin')
@Controller('v1/api-keys')
export class ApiKeysController {
  constructor(private readonly keys: ApiKeysService) {}

  @Post()
  @Audited('api-key.create', 'key_id')
  @HttpCode(201)
  @ApiOperation({ summary: 'make an API key; its secret is in this answer and nowhere else' })
  @ApiOkResponse({ type: NewApiKeyDto })
  @ApiErrors(ContractErrorCode.CREATE_CONFLICT)
  async create(@Body() dto: CreateApiKeyDto): Promise<Envelope<NewApiKeyDto>> {
    const { key, secret } = await this.keys.create({
      name: dto.name,
      role: dto.role,
      tenant: dto.tenant ?? null,
      expiresAt: dto.expires_at ? Date.parse(dto.expires_at) : null,
    });
    return ok({ ...toApiKeyDto(key), key: secret });
  }

  @Get()
  @ApiOperation({ summary: 'every API key (never a secret)' })
  @ApiOkResponse({ type: [ApiKeyDto] })
  async list(): Promise<Envelope<ApiKeyDto[]>> {
    return ok((await this.keys.list()).map(toApiKeyDto));
  }

  @Delete(':key_id')
  @Audited('api-key.revoke', 'key_id')
  @ApiOperation({ summary: 'revoke an API key: refused from the next request on' })
  @ApiOkResponse({ type: ApiKeyDto })
  async revoke(@Param('key_id') keyId: string): Promise<Envelope<ApiKeyDto>> {
    return ok(toApiKeyDto(await this.keys.revoke(keyId)));
  }
}
