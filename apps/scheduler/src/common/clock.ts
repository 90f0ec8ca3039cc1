// The one time source (libs/time): injected everywhere time is read or awaited, so a test can
// hand the whole application a ManualClock.
export { Clock, ManualClock, systemClock } from '@baton/time';
export type { Deadline, Timer } from '@baton/time';
