// Shapes of the API the operations pages use (overview chart and backlog, timers, log rules,
// webhooks), generated from openapi/scheduler.v1.json (type-only: nothing is bundled).
import type { components } from '../../../../libs/scheduler-client/src/generated/scheduler.v1';

type Schemas = components['schemas'];
export type TaskHistory = Schemas['TaskHistoryDto'];
export type Backlog = Schemas['BacklogDto'];
export type TimerPreview = Schemas['TimerPreviewDto'];
export type CreateTimer = Schemas['CreateTimerDto'];
export type LogRuleTest = Schemas['LogRuleTestDto'];
export type Webhook = Schemas['WebhookDto'];
export type WebhookWithSecret = Schemas['WebhookWithSecretDto'];

/** The outcomes of a finished task, in the order the chart stacks them. */
export const OUTCOMES = ['SUCCESS', 'FAIL', 'ROLLBACK', 'CANCELLED'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** A minute's local time, hours and minutes ("14:05"). */
export const hhmm = (ms: number): string =>
  new Date(ms).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
