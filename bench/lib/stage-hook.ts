// Preloaded into a gateway (`node --import bench/lib/stage-hook.ts …`) by bench/ttft-stages.ts: timestamps each
// streamed request's stages inside the process, whatever the build, and prints them at exit. A: the request
// parsed → the upstream request's first write; C: the first upstream read holding a content chunk → its write to
// the client. `STAGE_UPSTREAM_PORT` names the upstream's port. One request at a time (lone streams).
import { writeSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { isMainThread } from 'node:worker_threads';

interface Stages {
  request: number;
  upstream?: number;
  contentIn?: number;
  contentOut?: number;
}

if (isMainThread) {
  const upstreamPort = Number(process.env['STAGE_UPSTREAM_PORT']);
  const MARKER = '"content":" t';
  const marker = Buffer.from(MARKER);
  const hasMarker = (data: unknown): boolean =>
    Buffer.isBuffer(data) ? data.includes(marker) : typeof data === 'string' && data.includes(MARKER);
  const rows: Stages[] = [];
  let current: Stages | undefined;

  // eslint-disable-next-line @typescript-eslint/unbound-method -- always called with the original `this`
  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (this: http.Server, event: string, ...rest: unknown[]): boolean {
    const req = rest[0] as http.IncomingMessage | undefined;
    if (event === 'request' && req?.method === 'POST' && req.url?.startsWith('/v1/chat') === true) {
      if (current) rows.push(current);
      current = { request: performance.now() };
      // A process without a SIGTERM handler of its own (the bare proxy) is killed by the stop: exit, so the
      // rows are printed.
      if (process.listenerCount('SIGTERM') === 0) process.on('SIGTERM', () => process.exit(0));
    }
    return Reflect.apply(emit, this, [event, ...rest]) as boolean;
  } as typeof emit;

  // eslint-disable-next-line @typescript-eslint/unbound-method -- always called with the original `this`
  const push = net.Socket.prototype.push;
  net.Socket.prototype.push = function (
    this: net.Socket,
    chunk: unknown,
    encoding?: BufferEncoding,
  ): boolean {
    if (
      current?.upstream !== undefined &&
      current.contentIn === undefined &&
      this.remotePort === upstreamPort &&
      hasMarker(chunk)
    )
      current.contentIn = performance.now();
    return push.call(this, chunk, encoding);
  };

  // eslint-disable-next-line @typescript-eslint/unbound-method -- always called with the original `this`
  const write = net.Socket.prototype.write;
  net.Socket.prototype.write = function (this: net.Socket, data: unknown, ...rest: unknown[]): boolean {
    if (current !== undefined) {
      if (this.remotePort === upstreamPort) current.upstream ??= performance.now();
      else if (current.contentIn !== undefined && current.contentOut === undefined && hasMarker(data))
        current.contentOut = performance.now();
    }
    return (write as (...args: unknown[]) => boolean).call(this, data, ...rest);
  };

  process.on('exit', () => {
    if (current) rows.push(current);
    const lines = rows
      .filter((row) => row.upstream !== undefined && row.contentOut !== undefined)
      .map((row) => `STAGES ${row.upstream! - row.request} ${row.contentOut! - row.contentIn!}\n`);
    writeSync(2, lines.join(''));
  });
}
