/**
 * Run as its own process (so that the writes cost the test process nothing while it times the gateway):
 * sends `parallel` copies of a body of `bytes` bytes, a JSON object whose one field holds arrays nested as
 * deep as the size allows, each on a keep-alive connection of its own, and prints the answers as one JSON line.
 *   node body-flood.ts <url> <method> <field> <bytes> <parallel> [headers-json]
 */
import { Agent, request } from 'node:http';

const [url, method, field, bytes, parallel, headersJson] = process.argv.slice(2);
const head = `{"${field}":`;
const depth = Math.floor((Number(bytes) - head.length - 1) / 2);
const body = Buffer.from(head + '['.repeat(depth) + ']'.repeat(depth) + '}');
const headers = JSON.parse(headersJson ?? '{}') as Record<string, string>;

/** A client that asks to close its connection has it closed under its writes once the server answers early. */
function send(): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url!,
      {
        method: method!,
        agent: new Agent({ keepAlive: true, maxSockets: 1 }),
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(body.length) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (piece: string) => (text += piece));
        res.on('end', () => {
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // Not JSON: kept as text, for the test to show.
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
          req.socket?.destroy();
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const answers = await Promise.all(Array.from({ length: Number(parallel) }, send));
process.stdout.write(`${JSON.stringify(answers)}\n`);
process.exit(0);
