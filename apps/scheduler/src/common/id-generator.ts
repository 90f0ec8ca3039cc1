import { Injectable } from '@nestjs/common';
import { monotonicUlid } from './ulid';

/** Task ids: ULIDs, time-ordered (the list pages by id) and unique across instances. */
@Injectable()
export class IdGenerator {
  private readonly next = monotonicUlid();

  taskId(): string {
    return this.next();
  }
}
