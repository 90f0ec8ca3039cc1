import { ApiProperty } from '@nestjs/swagger';
import { ContractErrorCode } from '../errors/contract.exception';

/** Every answer of a worker and of the scheduler: `{code, message, data}`; code 0 is success. */
export interface Envelope<T> {
  code: number;
  message: string;
  data: T;
}

/** Builds the success envelope. */
export function ok<T>(data: T): Envelope<T> {
  return { code: ContractErrorCode.OK, message: 'ok', data };
}

/** The error envelope as a schema; success envelopes are composed per operation. */
export class ErrorEnvelopeDto {
  @ApiProperty({
    type: 'integer',
    example: 40900,
    description: 'non-zero code from the error table; code / 100 is the HTTP status',
  })
  code!: number;

  @ApiProperty({ example: 'transition FINISH -> RUNNING is not allowed' })
  message!: string;

  @ApiProperty({ nullable: true, type: 'object', additionalProperties: true })
  data!: Record<string, unknown> | null;
}

/** True when `value` has the shape of an envelope (used by clients and the conformance kit). */
export function isEnvelope(value: unknown): value is Envelope<unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return Number.isInteger(v.code) && typeof v.message === 'string' && 'data' in v;
}
