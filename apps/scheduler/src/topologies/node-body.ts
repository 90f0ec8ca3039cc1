import { describeValidationErrors } from '@baton/task-contract';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { CreateTaskDto, fastCreateTask } from '../tasks';

/**
 * A node's rendered task body checked as `POST /v1/tasks` checks its body: the create DTO, or
 * the reasons it is not one (the node then fails to start, with them as its error).
 */
export async function createBodyOf(
  body: Record<string, unknown>,
): Promise<{ dto: CreateTaskDto } | { problem: string }> {
  // The create route's precompiled checks first (a fan-out renders thousands of bodies); what they
  // do not accept at once goes through the DTO's own, which word the refusal.
  const fast = fastCreateTask(body);
  if (fast) return { dto: fast };
  const dto = plainToInstance(CreateTaskDto, body);
  const errors = await validate(dto, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length === 0) return { dto };
  return { problem: `the task body is not valid: ${describeValidationErrors(errors).join('; ')}` };
}
