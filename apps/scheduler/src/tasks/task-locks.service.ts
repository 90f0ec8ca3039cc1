import { Injectable } from '@nestjs/common';
import { LockKeyState, ResourceLeases } from '../engine';
import { TasksRepository } from '../task-store';
import { WorkersService } from '../workers';
import { TaskLockDto } from './dto/task-lock.dto';
import { TasksService } from './tasks.service';

/** A key's state, held by a lease or (`byState`) by a task's state where no lease is. */
type KeyHolding = LockKeyState & { byState?: boolean };

/** Shown instead of a holder a key of one tenant may not see (as the task's log says it). */
const OTHER_TENANT = 'a task of another tenant';

/** Who holds a task's lock keys, read from the lock backend. */
@Injectable()
export class TaskLocksService {
  constructor(
    private readonly tasks: TasksService,
    private readonly repo: TasksRepository,
    private readonly leases: ResourceLeases,
    private readonly workers: WorkersService,
  ) {}

  /**
   * One entry per lock key of the task. Lock keys are shared by every tenant; a caller held to
   * one tenant (`tenant`) is not told which task of another tenant holds a key.
   */
  async locks(taskId: string, tenant: string | null): Promise<TaskLockDto[]> {
    const task = await this.tasks.get(taskId);
    const states = await this.leases.inspect(task.lockKeys);
    const tenants = new Map<string, string | undefined>();
    const out: TaskLockDto[] = [];
    for (const leased of states) {
      // A key no lease holds may still be held by a task's state (its attempt under way, its
      // scheduler gone and the lease run out): the engine waits for that holder, so it shows.
      const s: KeyHolding = leased.held ? leased : await this.heldByState(leased, taskId);
      let hidden = false;
      if (tenant !== null && s.held && s.holderTaskId !== taskId) {
        // A labelled holding of a task of another tenant (or of one gone from the database) is
        // hidden; an unlabelled one names no task, and its backend token is shown as it is.
        const id = s.holderTaskId;
        if (id !== null && !tenants.has(id)) tenants.set(id, await this.repo.tenantOf(id));
        hidden = id !== null && tenants.get(id) !== tenant;
      }
      out.push(toTaskLockDto(s, taskId, hidden));
    }
    return out;
  }

  private async heldByState(s: LockKeyState, taskId: string): Promise<KeyHolding> {
    const holder = await this.repo.lockKeyHolder([s.key], taskId, this.workers.liveSince());
    if (holder === undefined) return s;
    return { ...s, held: true, holder: `task ${holder}`, holderTaskId: holder, byState: true };
  }
}

function toTaskLockDto(s: KeyHolding, taskId: string, hidden: boolean): TaskLockDto {
  return {
    key: s.key,
    held: s.held,
    held_by: !s.held ? null : s.byState ? 'task_state' : 'lease',
    holder: hidden ? OTHER_TENANT : s.holder,
    holder_task_id: hidden ? null : s.holderTaskId,
    held_by_this_task: s.held && s.holderTaskId === taskId,
    fence: s.fence,
    expires_at: s.expiresAt?.toISOString() ?? null,
  };
}
