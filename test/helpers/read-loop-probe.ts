import type { RunningGateway } from './process.ts';

/** What a gateway's loop probe (helpers/loop-probe.ts) measured since its last reading. */
export interface LoopReading {
  maxBlockMs: number;
  ticks: number;
}

/**
 * Asks the gateway process for its probe's reading (SIGUSR2) and starts a new measurement; rejects when no
 * answer comes within `timeoutMs`, which means the gateway's event loop is stuck.
 */
export async function readLoopProbe(gateway: RunningGateway, timeoutMs: number): Promise<LoopReading> {
  const seen = gateway.output().split('loop-probe ').length;
  gateway.child.kill('SIGUSR2');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const parts = gateway.output().split('loop-probe ');
    if (parts.length > seen) return JSON.parse(parts[seen]!.split('\n')[0]!) as LoopReading;
    if (Date.now() > deadline)
      throw new Error('the gateway did not answer the probe: its event loop is stuck');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
