import { AsyncLocalStorage } from 'node:async_hooks';
import type { Logger } from 'pino';
import type { Metrics } from './metrics.ts';

/**
 * The request a piece of work belongs to, across its awaits and callbacks: a fault that escapes every
 * handler is logged with the id of the request it happened in.
 */
export const requestScope = new AsyncLocalStorage<string>();

export interface FaultPolicyOptions {
  logger: Logger;
  metrics: Metrics;
  /** Drains in-flight work and ends the process with this exit code. */
  stop: (reason: string, exitCode: number) => void;
  /** The process (a stand-in in tests). */
  target?: Pick<NodeJS.Process, 'on'>;
}

/**
 * The last line of defence, for faults that escaped every handler (docs/decisions.md, "Process faults").
 * Every stream, socket and body has its errors handled where it is created, so reaching here is a defect:
 * - an uncaught exception leaves some object in an unknown state: it is logged (with the request id when
 *   the fault happened inside a request) and counted, then the process drains its in-flight requests and
 *   exits with status 1 so its supervisor starts a clean one;
 * - an unhandled rejection is a promise whose failure nobody awaited; its own call chain has already
 *   unwound, nothing is half-written: it is logged and counted, and the process carries on.
 */
export function installFaultPolicy(options: FaultPolicyOptions): void {
  const { logger, metrics, stop } = options;
  const target = options.target ?? process;
  target.on('uncaughtException', (error: Error) => {
    metrics.processFaults.inc({ kind: 'uncaught_exception' });
    logger.fatal(
      { err: error, reqId: requestScope.getStore() },
      'uncaught exception: draining in-flight requests, then exiting for a clean restart',
    );
    stop('uncaughtException', 1);
  });
  target.on('unhandledRejection', (reason: unknown) => {
    metrics.processFaults.inc({ kind: 'unhandled_rejection' });
    logger.error({ err: reason, reqId: requestScope.getStore() }, 'unhandled promise rejection');
  });
}
