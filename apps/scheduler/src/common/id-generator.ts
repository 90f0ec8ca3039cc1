import { Injectable } from '@nestjs/common';
import { monotonicFactory } from 'ulid';

/** Task ids: ULIDs, time-ordered (the list pages by id) and unique across instances. */
@Injectable()
export class IdGenerator {
  private readonly next = monotonicFactory();

  taskId(): string {
    return this.next();
  }
}
