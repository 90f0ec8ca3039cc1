import {
  TopologyEntity,
  TopologyHistoryEntity,
  TopologyNodeEntity,
  TopologyRunEntity,
} from './topology.entities';

export * from './topologies.module';
export { StartRunDto } from './dto/topology.dto';
export { TOPOLOGY_NAME } from './topology-definition';
export { TopologyRunsService } from './topology-runs.service';
export { ApprovalRequests, type ApprovalRequested } from './approval-requests';

/** The tables this module owns, for the data source. */
export const TOPOLOGIES_ENTITIES = [
  TopologyEntity,
  TopologyRunEntity,
  TopologyNodeEntity,
  TopologyHistoryEntity,
];
