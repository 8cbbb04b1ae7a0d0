import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { Agent, run, setDefaultOpenAIClient, setTracingDisabled, tool as agentTool } from '@openai/agents';
import { generateText, stepCountIs, tool } from 'ai';
import OpenAI from 'openai';
import { z } from 'zod';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

/**
 * Two agent frameworks whose default OpenAI model speaks the Responses API, pointed at Tollgate: each runs a turn
 * in which the model calls a tool, the framework runs it and sends its output back, and the model answers.
 */
describe('agent frameworks on /v1/responses (simulator)', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let key: string;
  /** The paths each framework called: both must have used the Responses API. */
  let paths: string[] = [];
  const recording = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    paths.push(new URL(input instanceof Request ? input.url : input).pathname);
    return fetch(input, init);
  };

  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({ backend: opened, yaml: { simulator: { chunk_interval_ms: 1 } } });
    const registered = await server.registerOn('pro');
    key = registered.key;
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  it('the Vercel AI SDK’s default openai provider runs a tool-using turn', async () => {
    const calls: string[] = [];
    paths = [];
    const openai = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: key, fetch: recording });
    const result = await generateText({
      model: openai('model-c'),
      prompt: 'What is the weather in Paris?',
      tools: {
        get_weather: tool({
          description: 'The weather in a city',
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            calls.push(city);
            return { city, celsius: 21 };
          },
        }),
      },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    assert.equal(calls.length, 1, 'the tool ran once');
    assert.deepEqual(paths, ['/v1/responses', '/v1/responses']);
    assert.equal(result.steps.length, 2);
    assert.equal(result.steps[0]?.finishReason, 'tool-calls');
    assert.equal(result.finishReason, 'stop');
    assert.match(result.text, /^From the tool result: /);
    assert.ok(result.totalUsage.inputTokens! > 0 && result.totalUsage.outputTokens! > 0);
  });

  it('the OpenAI Agents SDK’s default model runs a tool-using turn', async () => {
    setTracingDisabled(true);
    paths = [];
    setDefaultOpenAIClient(
      new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0, fetch: recording }) as never,
    );
    const calls: string[] = [];
    const getWeather = agentTool({
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        calls.push(city);
        return `21 degrees in ${city}`;
      },
    });
    const agent = new Agent({
      name: 'Weather',
      instructions: 'Answer with the weather tool.',
      model: 'model-c',
      tools: [getWeather],
    });
    const result = await run(agent, 'What is the weather in Paris?');
    assert.equal(calls.length, 1, 'the tool ran once');
    assert.match(String(result.finalOutput), /^From the tool result: /);
    assert.deepEqual(paths, ['/v1/responses', '/v1/responses']);
  });
});
