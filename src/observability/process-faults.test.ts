import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { Metrics } from './metrics.ts';
import { installFaultPolicy, requestScope } from './process-faults.ts';

interface LogLine {
  level: number;
  reqId?: string;
  err?: { message: string };
}

/** The policy against a stand-in process: what is logged, counted and stopped. */
function harness() {
  const lines: LogLine[] = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) },
  );
  const metrics = new Metrics();
  const stops: [string, number][] = [];
  const target = new EventEmitter();
  installFaultPolicy({
    logger,
    metrics,
    stop: (reason, exitCode) => void stops.push([reason, exitCode]),
    target: target as unknown as NodeJS.Process,
  });
  const count = async (kind: string): Promise<number> => {
    const metric = await metrics.processFaults.get();
    return metric.values.find((value) => value.labels.kind === kind)?.value ?? NaN;
  };
  return { lines, stops, target, count, metrics };
}

describe('process fault policy', () => {
  it('starts with both counters at zero, visible in /metrics', async () => {
    const { count, metrics } = harness();
    assert.equal(await count('uncaught_exception'), 0);
    assert.equal(await count('unhandled_rejection'), 0);
    assert.match(
      await metrics.registry.metrics(),
      /tollgate_process_faults_total\{kind="uncaught_exception"\} 0/,
    );
  });

  it('an uncaught exception is logged with its request id, counted, and drains to exit status 1', async () => {
    const { lines, stops, target, count } = harness();
    requestScope.run('req_fault1', () => target.emit('uncaughtException', new Error('boom')));
    assert.deepEqual(stops, [['uncaughtException', 1]]);
    assert.equal(await count('uncaught_exception'), 1);
    const line = lines.find((entry) => entry.level === 60);
    assert.equal(line?.reqId, 'req_fault1');
    assert.equal(line.err?.message, 'boom');
  });

  it('an unhandled rejection is logged and counted; the process carries on', async () => {
    const { lines, stops, target, count } = harness();
    target.emit('unhandledRejection', new Error('nobody awaited me'));
    assert.deepEqual(stops, []);
    assert.equal(await count('unhandled_rejection'), 1);
    assert.equal(lines.find((entry) => entry.level === 50)?.err?.message, 'nobody awaited me');
  });
});
