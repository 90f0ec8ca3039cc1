import { LogOffsetEntity } from './log-offset.entity';
import { LogRuleEntity } from './log-rule.entity';

export * from './logdumper.module';
export { COUNTER_NAMES, metricName } from './logdumper.counters';

/** The tables this module owns, for the data source. */
export const LOGDUMPER_ENTITIES = [LogRuleEntity, LogOffsetEntity];
