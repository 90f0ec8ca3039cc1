import { ContractErrorCode } from '../errors/contract.exception';

/** Answers that mean "the scheduler does not know this worker": register again. */
export const NotFoundLikeCodes: ReadonlySet<ContractErrorCode> = new Set([
  ContractErrorCode.NOT_FOUND,
  ContractErrorCode.TASK_NOT_FOUND,
]);
