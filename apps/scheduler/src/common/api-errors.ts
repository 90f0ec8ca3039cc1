import { SetMetadata } from '@nestjs/common';
import { ContractErrorCode } from '@baton/task-contract';

export const API_ERRORS = 'baton:api-errors';

/**
 * The errors a route answers beyond those every route of its kind does (credentials, a body that
 * does not validate, an unknown id in the path: the API document adds those by itself). Each
 * one is documented in the OpenAPI document with its status and an example.
 */
export const ApiErrors = (...codes: ContractErrorCode[]): MethodDecorator =>
  SetMetadata(API_ERRORS, codes);
