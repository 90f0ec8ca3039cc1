import { ProducerMemberEntity, TimerEntity } from './timer.entity';

export * from './producer.module';

/** The tables this module owns, for the data source. */
export const PRODUCER_ENTITIES = [TimerEntity, ProducerMemberEntity];
