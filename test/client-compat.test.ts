// The clients developers try first, against Tollgate on its default (the simulator): each must work as it
// does against OpenAI, structured outputs included.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { HumanMessage, ToolMessage, type AIMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, Output, stepCountIs, streamObject, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

const MODEL = 'model-b';
// generateObject is deprecated in AI SDK 7 but still what most code calls; its warning would only add noise.
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

const Recipe = z.object({
  title: z.string(),
  servings: z.number().int().min(1),
  difficulty: z.enum(['easy', 'medium', 'hard']),
  ingredients: z.array(z.object({ name: z.string(), grams: z.number(), optional: z.boolean() })).min(1),
  author: z.object({ name: z.string(), email: z.string().nullable() }),
});

describe('client compatibility on the default simulator', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let key: string;
  let baseURL: string;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({ backend: opened, yaml: { simulator: { chunk_interval_ms: 0 } } });
    ({ key } = await server.registerOn('pro'));
    baseURL = `${server.url}/v1`;
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  describe('the openai SDK', () => {
    let client: OpenAI;
    before(() => {
      client = new OpenAI({ apiKey: key, baseURL, maxRetries: 0 });
    });

    it('plain and streamed', async () => {
      const completion = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'Hi' }],
      });
      assert.ok(completion.choices[0]?.message.content);
      const stream = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'Hi' }],
        stream: true,
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      assert.ok(text.length > 0);
    });

    it('a tools round trip with runTools', async () => {
      let called: unknown;
      const runner = client.chat.completions.runTools({
        model: MODEL,
        messages: [{ role: 'user', content: 'Weather in Oslo?' }],
        tools: [
          {
            type: 'function',
            function: {
              name: 'get_weather',
              description: 'Weather for a place',
              parameters: {
                type: 'object',
                properties: {
                  place: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
                },
                required: ['place'],
              },
              parse: (input: string) => JSON.parse(input) as { place: { city: string } },
              function: (args: { place: { city: string } }) => {
                called = args;
                return { temperature: 4 };
              },
            },
          },
        ],
      });
      const answer = await runner.finalContent();
      assert.deepEqual(called, { place: { city: 'example' } });
      assert.match(answer ?? '', /^From the tool result/);
    });

    it('chat.completions.parse with zodResponseFormat', async () => {
      const completion = await client.chat.completions.parse({
        model: MODEL,
        messages: [{ role: 'user', content: 'A recipe, please' }],
        response_format: zodResponseFormat(Recipe, 'recipe'),
      });
      const recipe = completion.choices[0]?.message.parsed;
      assert.ok(recipe);
      Recipe.parse(recipe);
      assert.ok(recipe.ingredients.length >= 1);
    });
  });

  describe('the Vercel AI SDK (openai-compatible provider)', () => {
    const model = () =>
      createOpenAICompatible({ name: 'tollgate', baseURL, apiKey: key, supportsStructuredOutputs: true })(
        MODEL,
      );

    it('generateText and streamText', async () => {
      const { text, usage } = await generateText({ model: model(), prompt: 'Hello' });
      assert.ok(text.length > 0);
      assert.ok((usage.outputTokens ?? 0) > 0);
      const result = streamText({ model: model(), prompt: 'Hello' });
      let streamed = '';
      for await (const part of result.textStream) streamed += part;
      assert.ok(streamed.length > 0);
    });

    it('tools: a call with nested arguments, the result sent back, then the answer', async () => {
      const seen: unknown[] = [];
      const { text, steps } = await generateText({
        model: model(),
        prompt: 'Book a table',
        stopWhen: stepCountIs(3),
        tools: {
          book: tool({
            description: 'Books a table',
            inputSchema: z.object({ venue: z.object({ name: z.string(), seats: z.number().int() }) }),
            execute: async (input) => {
              seen.push(input);
              return { confirmed: true };
            },
          }),
        },
      });
      assert.deepEqual(seen, [{ venue: { name: 'example', seats: 1 } }]);
      assert.equal(steps.length, 2);
      assert.match(text, /^From the tool result/);
    });

    it('generateObject, streamObject and generateText with Output.object, on a nested zod schema', async () => {
      const { object } = await generateObject({ model: model(), schema: Recipe, prompt: 'A recipe' });
      Recipe.parse(object);
      const streamed = streamObject({ model: model(), schema: Recipe, prompt: 'A recipe' });
      let partials = 0;
      for await (const partial of streamed.partialObjectStream) if (partial) partials++;
      Recipe.parse(await streamed.object);
      assert.ok(partials > 3, `the object arrived in ${partials} partial steps`);
      const { output } = await generateText({
        model: model(),
        output: Output.object({ schema: Recipe }),
        prompt: 'A recipe',
      });
      Recipe.parse(output);
    });
  });

  describe("LangChain's ChatOpenAI", () => {
    const chat = () =>
      new ChatOpenAI({ model: MODEL, apiKey: key, configuration: { baseURL }, maxRetries: 0 });

    it('invoke and stream', async () => {
      const answer = await chat().invoke('Hello');
      assert.ok(typeof answer.content === 'string' && answer.content.length > 0);
      let text = '';
      for await (const chunk of await chat().stream('Hello'))
        text += typeof chunk.content === 'string' ? chunk.content : '';
      assert.ok(text.length > 0);
    });

    it('tools: bindTools, the call, a ToolMessage back, then the answer', async () => {
      const lookup = langchainTool(async () => 'sunny', {
        name: 'lookup',
        description: 'Looks a place up',
        schema: z.object({ where: z.object({ city: z.string(), country: z.string() }) }),
      });
      const model = chat().bindTools([lookup]);
      const question = new HumanMessage('Weather?');
      const first: AIMessage = await model.invoke([question]);
      const call = first.tool_calls?.[0];
      assert.ok(call?.id);
      assert.deepEqual(call.args, { where: { city: 'example', country: 'example' } });
      const second = await model.invoke([
        question,
        first,
        new ToolMessage({ content: 'sunny', tool_call_id: call.id }),
      ]);
      assert.ok(typeof second.content === 'string');
      assert.match(second.content, /^From the tool result/);
    });

    it('withStructuredOutput (json schema and function calling)', async () => {
      for (const method of ['jsonSchema', 'functionCalling'] as const) {
        const recipe = await chat().withStructuredOutput(Recipe, { method }).invoke('A recipe');
        Recipe.parse(recipe);
      }
    });
  });
});
