import { AppError } from '../platform/errors.ts';

// The two answers of the key layer itself, shared by its claim paths.

export function inProgress(): AppError {
  return new AppError(
    'REQUEST_IN_PROGRESS',
    'a request with this Idempotency-Key is still being processed; retry later',
    {},
    { 'Retry-After': '1' },
  );
}

export function keyReused(): AppError {
  return new AppError('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used with a different request');
}
