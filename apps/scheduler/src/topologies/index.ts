import { TopologyEntity, TopologyNodeEntity, TopologyRunEntity } from './topology.entities';

export * from './topologies.module';

/** The tables this module owns, for the data source. */
export const TOPOLOGIES_ENTITIES = [TopologyEntity, TopologyRunEntity, TopologyNodeEntity];
