import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from './metrics.ts';

/**
 * A listener that serves GET /metrics alone, without a token, for an address only the scraper can reach
 * (TOLLGATE_METRICS_ADDRESS); everything else is 404.
 */
export function createMetricsServer(metrics: Metrics, logger: Logger): Server {
  const server = createServer((req, res) => {
    res.on('error', () => {});
    if (req.method !== 'GET' || (req.url !== '/metrics' && !req.url?.startsWith('/metrics?'))) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    metrics.registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body),
      (error: unknown) => {
        logger.error({ err: error }, 'metrics could not be collected');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n');
      },
    );
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  return server;
}

/** Starts the metrics listener; resolves once it listens, rejects if the address cannot be taken. */
export function listenMetrics(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
