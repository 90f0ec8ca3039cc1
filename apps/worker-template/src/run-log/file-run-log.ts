import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { RunLogEntry, RunLogListener } from '@baton/task-contract';

/** One line of the run log. `event: start` lines without an `end` are runs cut off by a crash. */
export interface RunLogLine extends RunLogEntry {
  event: 'start' | 'end';
  worker_id: string;
  pid: number;
}

/**
 * Appends every run start and end to a JSON-lines file, synchronously, so a `kill -9` loses at
 * most the line being written. Tests read it to prove no task (and no lock key) ran twice at once.
 */
export class FileRunLog implements RunLogListener {
  constructor(
    private readonly path: string,
    private readonly workerId: string,
  ) {
    mkdirSync(dirname(path), { recursive: true });
  }

  runStarted(entry: RunLogEntry): void {
    this.write({ ...entry, event: 'start', worker_id: this.workerId, pid: process.pid });
  }

  runEnded(entry: Required<RunLogEntry>): void {
    this.write({ ...entry, event: 'end', worker_id: this.workerId, pid: process.pid });
  }

  private write(line: RunLogLine): void {
    appendFileSync(this.path, `${JSON.stringify(line)}\n`);
  }
}
