import { type DestinationStream, type Logger, pino } from 'pino';
import { redactDeep } from '../shared/redact-secrets.ts';

/** Fields that hold secrets wherever they appear in a log line. */
const REDACT_PATHS = [
  'authorization',
  'password',
  'secret',
  'apiKey',
  'token',
  '*.authorization',
  '*.password',
  '*.secret',
  '*.apiKey',
  '*.token',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  '*.headers.authorization',
  '*.headers["x-api-key"]',
];

/**
 * The process's logger: JSON lines, secret fields censored, and errors (message, stack, causes) scrubbed of
 * anything that looks like a key or credential header — an upstream's error text may echo our request.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { err: (error: Error) => redactDeep(pino.stdSerializers.errWithCause(error)) },
  };
  return destination ? pino(options, destination) : pino(options);
}
