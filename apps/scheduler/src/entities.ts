import { AUTH_ENTITIES } from './auth';
import { LOGDUMPER_ENTITIES } from './logdumper';
import { PRODUCER_ENTITIES } from './producer';
import { TASK_STORE_ENTITIES } from './task-store';
import { TASK_TYPES_ENTITIES } from './task-types';
import { TASKS_ENTITIES } from './tasks';
import { TENANTS_ENTITIES } from './tenants';
import { TOPOLOGIES_ENTITIES } from './topologies';
import { WEBHOOKS_ENTITIES } from './webhooks';
import { WORKERS_ENTITIES } from './workers';

/** Every table's entity, gathered from the modules that own them, for the one data source. */
export const ENTITIES = [
  ...TASK_STORE_ENTITIES,
  ...TASK_TYPES_ENTITIES,
  ...WORKERS_ENTITIES,
  ...TASKS_ENTITIES,
  ...PRODUCER_ENTITIES,
  ...LOGDUMPER_ENTITIES,
  ...TENANTS_ENTITIES,
  ...AUTH_ENTITIES,
  ...WEBHOOKS_ENTITIES,
  ...TOPOLOGIES_ENTITIES,
];
