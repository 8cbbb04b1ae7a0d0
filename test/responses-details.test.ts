import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

/** The Responses API's smaller details through the openai SDK: logprobs when asked, other fields as chat's. */
describe('Responses details (simulator)', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  let openai: OpenAI;

  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({ backend: opened });
    const { key } = await server.registerOn('pro');
    openai = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  it('include message.output_text.logprobs gives each token its logprob and alternatives', async () => {
    const response = await openai.responses.create({
      model: 'model-b',
      input: 'Say something',
      include: ['message.output_text.logprobs'],
      top_logprobs: 2,
    });
    const message = response.output.find((item) => item.type === 'message');
    const part = message?.type === 'message' ? message.content[0] : undefined;
    assert.ok(part?.type === 'output_text');
    assert.ok(part.logprobs!.length > 0);
    assert.equal(part.logprobs!.map((entry) => entry.token).join(''), part.text);
    assert.equal(typeof part.logprobs![0]!.logprob, 'number');
    assert.equal(part.logprobs![0]!.top_logprobs.length, 2);
  });

  it('fields outside the Responses API meet chat’s rules: stop is honoured, service_tier refused; reasoning echoed', async () => {
    const cut = await openai.responses.create({
      model: 'model-b',
      input: 'Say something',
      stop: ['e'],
    } as never);
    assert.ok(!(cut as OpenAI.Responses.Response).output_text.includes('e'));
    await assert.rejects(
      openai.responses.create({ model: 'model-b', input: 'x', service_tier: 'flex' }),
      (error: any) => error.status === 400 && error.param === 'service_tier',
    );
    const echoed = await openai.responses.create({
      model: 'model-b',
      input: 'x',
      reasoning: { effort: 'low' },
    });
    assert.equal(echoed.reasoning?.effort, 'low');
  });
});
