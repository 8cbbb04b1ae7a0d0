import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Answer = { status: number } | { hang: true };

export interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  port: number;
  deliveries: Delivery[];
  /** Answers for the next deliveries, in order; after them, 200. */
  answer(...answers: Answer[]): void;
  /** Resolves when `count` deliveries have arrived (or rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<Delivery[]>;
  close(): Promise<void>;
}

/** A customer's webhook receiver on a loopback port, recording every delivery exactly as sent. */
export async function startReceiver(port = 0): Promise<Receiver> {
  const deliveries: Delivery[] = [];
  const answers: Answer[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (piece: Buffer) => (body += piece.toString()));
    request.on('end', () => {
      deliveries.push({ headers: request.headers, body, at: Date.now() });
      const answer = answers.shift() ?? { status: 200 };
      if ('hang' in answer) return;
      response.writeHead(answer.status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actual = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actual}/hooks`,
    port: actual,
    deliveries,
    answer: (...more) => void answers.push(...more),
    async waitFor(count, timeoutMs = 10_000) {
      const started = Date.now();
      while (deliveries.length < count) {
        if (Date.now() - started > timeoutMs)
          throw new Error(`only ${deliveries.length} of ${count} deliveries arrived`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return deliveries.slice(0, count);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
