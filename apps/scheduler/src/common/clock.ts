import { Injectable } from '@nestjs/common';

/** Time, behind an injectable so tests can hold it still. */
@Injectable()
export class Clock {
  now(): number {
    return Date.now();
  }
}
