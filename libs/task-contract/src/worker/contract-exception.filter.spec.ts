import { BadRequestException, HttpException, Logger } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '../errors/contract.exception';
import {
  StaleFenceError,
  WorkerProtocolError,
  WorkerTimeoutError,
  WorkerUnavailableError,
} from '../errors/worker-call.errors';
import { errorEnvelope } from './contract-exception.filter';

const logger = new Logger('test');
beforeAll(() => Logger.overrideLogger(false));

describe('errorEnvelope', () => {
  it('maps a contract exception to its code and status', () => {
    expect(
      errorEnvelope(
        new ContractException(ContractErrorCode.STALE_FENCE, 'old', { seen: 2 }),
        logger,
      ),
    ).toEqual({
      status: 409,
      body: { code: 40901, message: 'old', data: { seen: 2 } },
    });
  });

  it.each([
    [new StaleFenceError('w refused', ContractErrorCode.STALE_FENCE, 409), 409, 40901],
    [new WorkerUnavailableError('down', ContractErrorCode.WORKER_UNAVAILABLE, 0), 503, 50300],
    [new WorkerTimeoutError('slow', ContractErrorCode.WORKER_TIMEOUT, 0), 504, 50400],
    [new WorkerProtocolError('garbage', ContractErrorCode.OK, 200), 503, 50300],
  ])('passes a failed worker call on with its meaning (%s)', (err, status, code) => {
    const out = errorEnvelope(err, logger);
    expect(out.status).toBe(status);
    expect(out.body.code).toBe(code);
    expect(out.body.message).toMatch(/^worker: /);
  });

  it('reads a body-parser 400 as malformed and a validation 400 as a field list', () => {
    expect(errorEnvelope(new HttpException('Body is not valid JSON', 400), logger).body.code).toBe(
      40001,
    );
    const v = errorEnvelope(new BadRequestException(['a must be a string']), logger);
    expect(v.body).toEqual({
      code: 40000,
      message: 'a must be a string',
      data: { errors: ['a must be a string'] },
    });
  });

  it('hides an unexpected error behind an id, leaking no stack', () => {
    const out = errorEnvelope(new Error('secret internals at /srv/app.js:12'), logger);
    expect(out.status).toBe(500);
    expect(out.body.code).toBe(50000);
    expect(out.body.message).not.toContain('secret');
    expect(out.body.message).toContain((out.body.data as { error_id: string }).error_id);
  });
});
