import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsOptional, Matches } from 'class-validator';
import { TENANT_PATTERN } from '../../common';
import { SOURCE_NAME_PATTERN } from '../log-record';
import { SourceCounts } from '../logdumper.counters';

/** Records per `POST /v1/logs`. */
export const MAX_INGEST_RECORDS = 1000;

/** Body of `POST /v1/logs`. Records are checked one by one: a bad one is dropped, not the batch. */
export class IngestLogsDto {
  @ApiProperty({
    pattern: SOURCE_NAME_PATTERN.source,
    description: 'the sending source; its records are matched by rules for `http:<source>`',
  })
  @Matches(SOURCE_NAME_PATTERN, { message: 'source must be 1-64 characters of [A-Za-z0-9._-]' })
  source!: string;

  @ApiProperty({
    type: 'array',
    minItems: 1,
    maxItems: MAX_INGEST_RECORDS,
    items: {
      type: 'object',
      required: ['position'],
      properties: {
        position: {
          oneOf: [{ type: 'string' }, { type: 'integer', minimum: 0 }],
          description:
            'unique within the source (a sequence number, an offset, an event id): the idempotency key of what the record makes. Sending it again creates nothing new',
        },
        line: {
          type: 'string',
          description: 'a text line (a JSON-object line also feeds JSON rules)',
        },
        fields: { type: 'object', additionalProperties: true, description: 'a structured record' },
      },
    },
    description: 'each record has a position and exactly one of line or fields',
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_INGEST_RECORDS)
  records!: unknown[];

  @ApiPropertyOptional({
    pattern: TENANT_PATTERN.source,
    description:
      "the tenant the records are ingested for: only that tenant's rules (and rules of no tenant that make tasks in it) look at them. Without it, only the rules of no tenant do. A key of one tenant: always its own",
  })
  @IsOptional()
  @Matches(TENANT_PATTERN, { message: 'tenant must be a lower-case name' })
  tenant?: string;
}

export class RecordErrorDto {
  @ApiProperty({ description: 'index of the record in the batch' }) index!: number;
  @ApiProperty({ nullable: true, type: String }) position!: string | null;
  @ApiProperty({ enum: ['dropped', 'rejected'] }) outcome!: 'dropped' | 'rejected';
  @ApiProperty() reason!: string;
}

export class IngestResultDto {
  @ApiProperty() source!: string;
  @ApiProperty({ description: 'well-formed records' }) accepted!: number;
  @ApiProperty({ description: 'malformed records (listed in errors)' }) dropped!: number;
  @ApiProperty({ description: 'well-formed records no rule matched' }) unmatched!: number;
  @ApiProperty({ description: '(record, rule) matches' }) matched!: number;
  @ApiProperty({ description: 'tasks created' }) created!: number;
  @ApiProperty({ description: 'matches whose task already existed (a replay)' })
  duplicates!: number;
  @ApiProperty({ description: 'matches whose filled task failed create validation' })
  rejected!: number;
  @ApiProperty({ type: [RecordErrorDto] }) errors!: RecordErrorDto[];
}

export class SourceCountsDto implements SourceCounts {
  @ApiProperty() ingested!: number;
  @ApiProperty() dropped!: number;
  @ApiProperty() unmatched!: number;
  @ApiProperty() matched!: number;
  @ApiProperty() created!: number;
  @ApiProperty() duplicate!: number;
  @ApiProperty() rejected!: number;
}

export class LogStatsDto {
  @ApiProperty({
    type: 'object',
    additionalProperties: { $ref: '#/components/schemas/SourceCountsDto' },
    description:
      'per source id (`http:app`, `file:app`, `stream:app`), since this instance started',
  })
  sources!: Record<string, SourceCountsDto>;

  @ApiProperty({ type: SourceCountsDto }) totals!: SourceCountsDto;
}
