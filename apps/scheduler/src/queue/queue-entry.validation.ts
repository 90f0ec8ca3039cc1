import { QueueEntry } from './queue.driver';
import { QueueErrorCode, QueueException } from './queue.exception';

/** Highest priority; priorities run 0..MAX_PRIORITY and the highest is claimed first. */
export const MAX_PRIORITY = 9;

/**
 * Rejects malformed entries before any of them is written, so a bad batch changes nothing
 * (a priority of 12 would otherwise land in a key no claim ever reads, and be lost).
 */
export function assertValidEntries(entries: readonly QueueEntry[]): void {
  for (const entry of entries) {
    if (typeof entry.taskId !== 'string' || entry.taskId.length === 0) {
      throw invalid('taskId must be a non-empty string', entry);
    }
    if (!Number.isInteger(entry.priority) || entry.priority < 0 || entry.priority > MAX_PRIORITY) {
      throw invalid(`priority must be an integer 0–${MAX_PRIORITY}`, entry);
    }
    if (!Number.isFinite(entry.dueAt)) {
      throw invalid('dueAt must be a finite epoch-ms number', entry);
    }
  }
}

/**
 * Rejects a batch size or lease that is not an integer of at least `min`: NaN or a fraction
 * would reach Redis as a bad LIMIT or score, a negative lease would hand out lapsed claims.
 */
export function assertIntegerAtLeast(name: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min) {
    throw new QueueException(QueueErrorCode.INVALID_ENTRY, `${name} must be an integer >= ${min}`, {
      [name]: value,
    });
  }
}

function invalid(message: string, entry: QueueEntry): QueueException {
  return new QueueException(QueueErrorCode.INVALID_ENTRY, message, {
    taskId: entry.taskId,
    priority: entry.priority,
    dueAt: entry.dueAt,
  });
}
