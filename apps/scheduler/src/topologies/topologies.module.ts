import { Module, OnModuleInit } from '@nestjs/common';
import { ANY_TENANT, AuthModule, TenantScopes } from '../auth';
import { TaskChangeFeed, TaskStoreModule } from '../task-store';
import { TaskTypesModule } from '../task-types';
import { TasksModule } from '../tasks';
import { TopologiesController } from './topologies.controller';
import { TopologiesRepository } from './topologies.repository';
import { TopologiesService, topologyNotFound } from './topologies.service';
import { NodeTaskReader } from './node-task-reader';
import { TopologyDriver } from './topology-driver';
import { TopologyRunsController } from './topology-runs.controller';
import { TopologyRunsRepository } from './topology-runs.repository';
import { TopologyRunsService, runNotFound } from './topology-runs.service';
import { TopologySweeper } from './topology-sweeper';
import { TopologyHistory } from './topology-history';
import { ApprovalRequests } from './approval-requests';
import { RunApprovals } from './run-approvals';
import { TopologyApprovalsController } from './topology-approvals.controller';
import { RunRepairs } from './run-repairs';

/**
 * Topologies: versioned DAG definitions (`/v1/topologies`) and their runs (`/v1/topology-runs`).
 * A run is a centre task; its nodes are tasks created through the tasks module and driven by the
 * engine like any other. The run moves on from the task store's durable change feed.
 */
@Module({
  imports: [AuthModule, TaskStoreModule, TaskTypesModule, TasksModule],
  controllers: [TopologiesController, TopologyRunsController, TopologyApprovalsController],
  providers: [
    TopologiesRepository,
    TopologyRunsRepository,
    TopologiesService,
    TopologyRunsService,
    TopologyDriver,
    NodeTaskReader,
    TopologySweeper,
    RunRepairs,
    TopologyHistory,
    RunApprovals,
    ApprovalRequests,
  ],
  // The Producer starts runs of timers whose template is a topology.
  exports: [TopologyRunsService, ApprovalRequests],
})
export class TopologiesModule implements OnModuleInit {
  constructor(
    private readonly scopes: TenantScopes,
    private readonly feed: TaskChangeFeed,
    private readonly driver: TopologyDriver,
    private readonly runs: TopologyRunsRepository,
    private readonly defs: TopologiesRepository,
  ) {}

  onModuleInit(): void {
    this.feed.subscribe(this.driver);
    this.scopes.owns('run_id', async (id) => (await this.runs.get(id))?.tenant, runNotFound);
    // A definition of no tenant is every tenant's to read and run; one of a tenant, its own.
    this.scopes.owns(
      'topology',
      async (name) => {
        const def = await this.defs.get(name);
        return def && (def.tenant ?? ANY_TENANT);
      },
      (name) => topologyNotFound(name),
    );
  }
}
