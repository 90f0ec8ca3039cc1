import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** One label of a task, in its own table so the list can filter by label with an index. */
@Entity('baton_task_label')
@Index('ix_task_label_kv', ['label_key', 'label_value'])
export class TaskLabelEntity {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  task_id!: string;

  @PrimaryColumn({ type: 'varchar', length: 100 })
  label_key!: string;

  @Column({ type: 'varchar', length: 200 })
  label_value!: string;
}
