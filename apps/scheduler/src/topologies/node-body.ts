import { describeValidationErrors } from '@baton/task-contract';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { CreateTaskDto } from '../tasks';

/**
 * A node's rendered task body checked as `POST /v1/tasks` checks its body: the create DTO, or
 * the reasons it is not one (the node then fails to start, with them as its error).
 */
export async function createBodyOf(
  body: Record<string, unknown>,
): Promise<{ dto: CreateTaskDto } | { problem: string }> {
  const dto = plainToInstance(CreateTaskDto, body);
  const errors = await validate(dto, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length === 0) return { dto };
  return { problem: `the task body is not valid: ${describeValidationErrors(errors).join('; ')}` };
}
