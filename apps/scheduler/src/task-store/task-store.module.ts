import { Module } from '@nestjs/common';
import { TasksRepository } from './tasks.repository';

/**
 * Where tasks live: their rows and compare-and-set, the lifecycle log and attempts, the
 * group-commit writer. Every other module reads and changes tasks through what this one exports.
 */
@Module({ providers: [TasksRepository], exports: [TasksRepository] })
export class TaskStoreModule {}
