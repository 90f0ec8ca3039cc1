import { TaskRecord } from '../task-record';
import { TaskStore } from './task-store.interface';

/** Keeps tasks in a Map; they are gone when the process ends. The default. */
export class MemoryTaskStore implements TaskStore {
  private readonly tasks = new Map<string, TaskRecord>();

  async get(taskId: string): Promise<TaskRecord | undefined> {
    const found = this.tasks.get(taskId);
    return found && structuredClone(found);
  }

  async findByName(taskName: string, limit: number): Promise<TaskRecord[]> {
    const matches: TaskRecord[] = [];
    for (const record of this.tasks.values())
      if (record.task_name === taskName) matches.push(record);
    return matches
      .sort((a, b) => b.created_at.localeCompare(a.created_at))
      .slice(0, limit)
      .map((r) => structuredClone(r));
  }

  async save(record: TaskRecord): Promise<void> {
    this.tasks.set(record.task_id, structuredClone(record));
  }

  async close(): Promise<void> {
    this.tasks.clear();
  }
}
