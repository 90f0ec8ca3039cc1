import { ContractErrorCode, ContractException } from '../errors/contract.exception';
import { TaskStatus } from '../enums/task-status.enum';
import { CreateTaskRequestDto } from '../dto/worker-requests.dto';
import { validateDto } from './validate';

const valid = () => ({
  task_id: '01JD2Z6W8ZK3Y4N5P6Q7R8S9T0',
  create_info: {
    task_type: 'demo.echo',
    task_name: 'n',
    important_level: 9,
    http_url: 'http://127.0.0.1:3100',
  },
  process_arg: { start_time: '2026-11-22T08:00:00Z', deadline_second: 60, max_retry: 3 },
  params: { anything: { nested: [1, 2] } },
});

function refusal(body: unknown): ContractException {
  try {
    validateDto(CreateTaskRequestDto, body);
  } catch (err) {
    if (err instanceof ContractException) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('validateDto(CreateTaskRequestDto)', () => {
  it('accepts a full valid body and keeps params untouched', () => {
    const dto = validateDto(CreateTaskRequestDto, valid());
    expect(dto.create_info.important_level).toBe(9);
    expect(dto.params).toEqual({ anything: { nested: [1, 2] } });
  });

  it('reads the Postpose alias of the initial status as POSTPONE', () => {
    const dto = validateDto(CreateTaskRequestDto, {
      ...valid(),
      process_arg: { task_status: 'Postpose' },
    });
    expect(dto.process_arg?.task_status).toBe(TaskStatus.POSTPONE);
  });

  it.each([
    ['an unknown top-level field', { ...valid(), extra: 1 }, 'extra'],
    [
      'an unknown create_info field',
      { ...valid(), create_info: { ...valid().create_info, extra: 1 } },
      'create_info.extra',
    ],
    [
      'an unknown process_arg field',
      { ...valid(), process_arg: { nope: true } },
      'process_arg.nope',
    ],
    ['no create_info', { task_id: 'x' }, 'create_info'],
    ['a bad task_id', { ...valid(), task_id: 'has space' }, 'task_id'],
    [
      'a priority of 10',
      { ...valid(), create_info: { ...valid().create_info, important_level: 10 } },
      'important_level',
    ],
    [
      'a string priority',
      { ...valid(), create_info: { ...valid().create_info, important_level: '9' } },
      'important_level',
    ],
    [
      'a bad task type',
      { ...valid(), create_info: { ...valid().create_info, task_type: 'Demo Echo' } },
      'task_type',
    ],
    [
      'a non-URL http_url',
      { ...valid(), create_info: { ...valid().create_info, http_url: 'not a url' } },
      'http_url',
    ],
    [
      'an ftp http_url',
      { ...valid(), create_info: { ...valid().create_info, http_url: 'ftp://x' } },
      'http_url',
    ],
    [
      'a non-date start_time',
      { ...valid(), process_arg: { start_time: 'tomorrow' } },
      'start_time',
    ],
    [
      'a RUNNING initial status',
      { ...valid(), process_arg: { task_status: 'RUNNING' } },
      'task_status',
    ],
    [
      'an unknown initial status',
      { ...valid(), process_arg: { task_status: 'DONE' } },
      'task_status',
    ],
    ['params that are an array', { ...valid(), params: [1] }, 'params'],
    ['lock_keys that are not strings', { ...valid(), lock_keys: [1] }, 'lock_keys'],
  ])('refuses %s with VALIDATION_FAILED naming the field', (_what, body, field) => {
    const err = refusal(body);
    expect(err.code).toBe(ContractErrorCode.VALIDATION_FAILED);
    expect(err.httpStatus).toBe(400);
    expect(err.message).toContain(field);
  });

  it.each([
    ['a string', 'x'],
    ['an array', []],
    ['a number', 3],
  ])('refuses %s body as MALFORMED_BODY', (_what, body) => {
    expect(refusal(body).code).toBe(ContractErrorCode.MALFORMED_BODY);
  });
});
