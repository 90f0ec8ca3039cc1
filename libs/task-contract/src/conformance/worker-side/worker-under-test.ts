import { ChildProcess, spawn } from 'node:child_process';

/** How much of the worker's output is kept, for the messages of failed checks. */
const OUTPUT_KEPT = 4000;

/**
 * The worker the worker-side checks start: its command run by `/bin/sh` with `exec` (so the
 * process the kit signals is the worker itself, not a shell), told the stand-in scheduler's URL
 * in the environment variable it reads it from.
 */
export class WorkerUnderTest {
  private readonly child: ChildProcess;
  private out = '';
  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  readonly exited: Promise<string>;

  constructor(command: string, env: NodeJS.ProcessEnv) {
    this.child = spawn('/bin/sh', ['-c', `exec ${command}`], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      // A group of its own: a worker that starts processes of its own (npm start) is ended whole.
      detached: true,
    });
    this.child.once('error', (err) => {
      this.out += `\n${command} could not be started: ${err.message}`;
    });
    const keep = (c: Buffer): void => {
      this.out = (this.out + c.toString()).slice(-OUTPUT_KEPT);
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve(signal ?? `exit code ${code}`)),
    );
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The end of what the worker printed. */
  output(): string {
    return this.out;
  }

  /** Sends SIGTERM, as a deploy (Kubernetes, systemd) does. */
  terminate(): void {
    if (this.running) this.child.kill('SIGTERM');
  }

  /** Ends it and whatever it started, for good (SIGKILL to its group), and waits for it. */
  async kill(): Promise<void> {
    const pid = this.child.pid;
    if (pid !== undefined) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // The group is gone already.
      }
    }
    if (pid !== undefined) await this.exited;
  }
}
