import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, type ModelMessage, stepCountIs, tool } from 'ai';
import OpenAI from 'openai';
import { z } from 'zod';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

/**
 * Clients that keep `store: true` (the AI SDK's default `openai()` provider, the openai SDK's default) send the
 * model's earlier output back as `item_reference`: Tollgate stores nothing, and resolves each reference from the
 * sealed item its id carries.
 */
describe('Responses item references resolve without storage', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let key: string;
  let otherKey: string;
  /** The request bodies sent to /v1/responses. */
  let bodies: any[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (typeof init?.body === 'string') bodies.push(JSON.parse(init.body));
    return fetch(input, init);
  };

  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({
      backend: opened,
      yaml: { simulator: { chunk_interval_ms: 1, first_token_ms: 0 } },
      env: { TOLLGATE_SECRET_KEY: 'an-item-sealing-key-of-at-least-32-characters' },
    });
    key = (await server.registerOn('pro')).key;
    otherKey = (await server.registerOn('pro')).key;
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  /** Five user turns through the AI SDK, each with a tool round trip; the answers' texts. */
  async function chat(store: boolean): Promise<string[]> {
    const openai = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: key, fetch: recording });
    const messages: ModelMessage[] = [];
    const answers: string[] = [];
    for (const city of ['Paris', 'Lima', 'Oslo', 'Quito', 'Hanoi']) {
      messages.push({ role: 'user', content: `What is the weather in ${city}?` });
      const result = await generateText({
        model: openai('model-c'),
        messages,
        tools: {
          get_weather: tool({
            description: 'The weather in a city',
            inputSchema: z.object({ city: z.string() }),
            execute: async () => ({ celsius: 21 }),
          }),
        },
        stopWhen: stepCountIs(3),
        maxRetries: 0,
        ...(store ? {} : { providerOptions: { openai: { store: false } } }),
      });
      assert.equal(result.steps.length, 2, 'a tool call, then the answer');
      assert.match(result.text, /^From the tool result: /);
      messages.push(...result.response.messages);
      answers.push(result.text);
    }
    return answers;
  }

  it('the AI SDK’s default provider runs a five-turn chat with a tool loop, as if it had sent the items', async () => {
    bodies = [];
    const referenced = await chat(true);
    const references = bodies.flatMap((body) =>
      (body.input as any[]).filter((item) => item.type === 'item_reference'),
    );
    // Turns 2 to 5 refer to every earlier answer's text: 1 + 2 + 3 + 4, each sent twice (the call and the answer).
    assert.equal(references.length, 20);
    assert.ok(references.every((item) => /^msg_tg1\./.test(item.id)));
    // The same chat with the items sent whole: the simulator answers from the prompt, so the same prompt gives the
    // same answers, and the resolved references made the same prompt.
    const sent = await chat(false);
    assert.deepEqual(referenced, sent);
  });

  it('an altered id, another account’s id, or a streamed answer’s plain id is a 400 naming the item', async () => {
    const openai = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
    const first = await openai.responses.create({ model: 'model-a', input: 'Say hello' });
    const id = first.output[0]!.id!;
    assert.match(id, /^msg_tg1\./);
    const turn = (reference: string, client = openai) =>
      client.responses.create({
        model: 'model-a',
        input: [
          { role: 'user', content: 'Say hello' },
          { type: 'item_reference', id: reference },
          { role: 'user', content: 'Again' },
        ],
      });
    const ok = await turn(id);
    assert.equal(ok.status, 'completed');

    const flip = id.at(-3) === 'A' ? 'B' : 'A';
    const altered = `${id.slice(0, -3)}${flip}${id.slice(-2)}`;
    await assert.rejects(turn(altered), (error: any) => {
      assert.equal(error.status, 400);
      assert.equal(error.param, 'input[1].id');
      assert.match(error.message, /not an item this account was given/);
      return true;
    });
    const other = new OpenAI({ apiKey: otherKey, baseURL: `${server.url}/v1`, maxRetries: 0 });
    await assert.rejects(
      turn(id, other),
      (error: any) => error.status === 400 && /not an item/.test(error.message),
    );

    const stream = await openai.responses.create({ model: 'model-a', input: 'Say hello', stream: true });
    let streamedId = '';
    for await (const event of stream)
      if (event.type === 'response.completed') streamedId = event.response.output[0]!.id!;
    await assert.rejects(turn(streamedId), (error: any) => {
      assert.equal(error.status, 400);
      assert.match(error.message, /send the item itself/);
      return true;
    });
  });
});
