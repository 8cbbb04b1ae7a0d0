// The floor: a bare node:http pass-through proxy to the mock upstream, with a keep-alive agent. It forwards the
// request's path (chat completions, or Anthropic's messages for the translated-stream comparison).
import { Agent, createServer, request as upstreamRequest } from 'node:http';

const port = Number(process.env['PROXY_PORT'] ?? 0);
const target = new URL(process.env['PROXY_TARGET'] ?? 'http://127.0.0.1:1');
const agent = new Agent({ keepAlive: true, maxSockets: 4096 });

const server = createServer((request, response) => {
  const forward = upstreamRequest(
    {
      host: target.hostname,
      port: target.port,
      path: request.url ?? '/v1/chat/completions',
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json' },
    },
    (upstream) => {
      response.writeHead(upstream.statusCode ?? 502, upstream.headers);
      upstream.pipe(response);
    },
  );
  forward.on('error', () => response.destroy());
  request.pipe(forward);
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
