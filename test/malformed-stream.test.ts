import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { ProviderConfig, ProviderType } from '../src/core/config.ts';
import type { ChatRequest } from '../src/gateway/chat-types.ts';
import { createProvider } from '../src/providers/create-provider.ts';
import { ProviderError } from '../src/providers/provider.ts';

/** A first well-formed event of each protocol, then a broken one. */
const FIRST_EVENT: Record<string, string> = {
  openai:
    'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n',
  anthropic:
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg","model":"m","usage":{"input_tokens":1}}}\n\n',
  gemini: 'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]}}],"responseId":"r"}\n\n',
};

describe('a malformed event in the middle of an upstream stream', () => {
  let server: Server;
  let url: string;
  const uncaught: unknown[] = [];
  const record = (error: unknown): void => void uncaught.push(error);

  before(async () => {
    process.on('uncaughtException', record);
    server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        const flavour = request.url?.includes(':stream')
          ? 'gemini'
          : request.url?.includes('messages')
            ? 'anthropic'
            : 'openai';
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(FIRST_EVENT[flavour]);
        response.end('data: {"broken": [\n\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    process.off('uncaughtException', record);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  for (const type of ['openai', 'anthropic', 'gemini'] as ProviderType[]) {
    it(`is a protocol error from the ${type} adapter, never an uncaught error`, async () => {
      const config: ProviderConfig = {
        id: type,
        type,
        baseUrl: type === 'openai' ? `${url}/v1` : type === 'gemini' ? `${url}/v1beta` : url,
        apiKey: 'k',
        headers: {},
        options: {},
      };
      const provider = createProvider(config, { connectMs: 1000, firstByteMs: 1000, idleStreamMs: 1000 });
      const request = {
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        includeUsage: false,
        maxTokens: undefined,
        temperature: 1,
        topP: undefined,
        stop: undefined,
        tools: undefined,
        toolChoice: undefined,
        body: { model: 'm', messages: [{ role: 'user', content: 'x' }] },
      } satisfies ChatRequest;
      const signal = new AbortController().signal;
      await assert.rejects(
        async () => {
          for await (const chunk of provider.stream({
            request,
            upstreamModel: 'm',
            signal,
            defaultMaxTokens: 10,
          }))
            void chunk;
        },
        (error: unknown) => error instanceof ProviderError && error.failure === 'protocol',
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
      await provider.close();
      assert.deepEqual(uncaught, []);
    });
  }
});
