import { Injectable } from '@nestjs/common';
import { Clock } from './clock';
import { monotonicUlid } from './ulid';

/** Task ids: ULIDs, time-ordered (the list pages by id) and unique across instances. */
@Injectable()
export class IdGenerator {
  private readonly next: () => string;

  constructor(clock: Clock) {
    this.next = monotonicUlid(() => clock.now());
  }

  taskId(): string {
    return this.next();
  }
}
