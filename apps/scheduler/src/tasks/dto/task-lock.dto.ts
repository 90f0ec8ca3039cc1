import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** One lock key of a task and who holds it, as the lock backend answers now. */
export class TaskLockDto {
  @ApiProperty({ description: 'one of the task’s lock_keys' }) key!: string;
  @ApiProperty({
    description:
      'someone holds the key now: a lease in the lock backend, or a task whose state holds it (an attempt under way or an outcome not yet cleaned up, whose lease ran out with its scheduler); the engine waits for either',
  })
  held!: boolean;
  @ApiPropertyOptional({
    nullable: true,
    enum: ['lease', 'task_state'],
    description:
      '`lease`: a holding in the lock backend; `task_state`: no lease, but the holder task’s state holds the key (an attempt under way, or one given up that a live worker has not yet been told to drop; the engine waits for it as for a lease; fence and expires_at are null); null when free',
  })
  held_by!: 'lease' | 'task_state' | null;
  @ApiPropertyOptional({
    nullable: true,
    type: String,
    description:
      'who holds it: `task <task_id> on scheduler <instance_id>`, or the lock backend’s own ' +
      'token of a holding that carries no such label; `a task of another tenant` for a key of ' +
      'one tenant when the holder is not its own; null when free',
    example: 'task 01JDZ8Q3M4X7J2V9R5T6Y8W0AB on scheduler sched-1',
  })
  holder!: string | null;
  @ApiPropertyOptional({
    nullable: true,
    type: String,
    description:
      'the task the holder’s label names; null when free, unlabelled, or hidden from a key of another tenant',
  })
  holder_task_id!: string | null;
  @ApiProperty({
    description:
      'the holder is this task (decided from the holder’s label; false when the holding carries no label, since then it is not known)',
  })
  held_by_this_task!: boolean;
  @ApiPropertyOptional({
    nullable: true,
    type: 'integer',
    description: 'the fence of the holding; null when free',
  })
  fence!: number | null;
  @ApiPropertyOptional({
    nullable: true,
    type: String,
    format: 'date-time',
    description:
      'when the holding ends unless its holder renews it (holders renew at half the TTL), by the ' +
      'lock backend’s account; null when free, and always with the ZooKeeper driver, which keeps no expiry',
  })
  expires_at!: string | null;
}
