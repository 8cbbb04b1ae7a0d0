import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatRequest } from '../../core/chat-types.ts';
import { chatRequestOf } from '../../core/testing.ts';
import {
  convertGeminiResponse,
  convertToGeminiRequest,
  geminiUsage,
  mapGeminiFinishReason,
} from './convert-gemini.ts';

const base: ChatRequest = chatRequestOf({ model: 'model-a', messages: [] });

describe('convert-gemini', () => {
  it('parallel tool calls: one model turn with both calls, one user turn with both named responses', () => {
    const body = convertToGeminiRequest({
      ...base,
      messages: [
        { role: 'developer', content: 'Rules.' },
        { role: 'user', content: 'Paris and Rome?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
            { id: 'c2', type: 'function', function: { name: 'time', arguments: '{"city":"Rome"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
        { role: 'tool', tool_call_id: 'c2', content: '[1, 2]' },
      ],
    }) as { contents: { role: string; parts: Record<string, unknown>[] }[]; systemInstruction: unknown };
    assert.deepEqual(body.systemInstruction, { parts: [{ text: 'Rules.' }] });
    assert.deepEqual(
      body.contents.map((content) => [content.role, content.parts.length]),
      [
        ['user', 1],
        ['model', 2],
        ['user', 2],
      ],
    );
    assert.deepEqual(body.contents[1]!.parts[1], {
      functionCall: { id: 'c2', name: 'time', args: { city: 'Rome' } },
    });
    assert.deepEqual(body.contents[2]!.parts, [
      { functionResponse: { id: 'c1', name: 'weather', response: { result: 'sunny' } } },
      { functionResponse: { id: 'c2', name: 'time', response: { result: [1, 2] } } },
    ]);
  });

  it('json_object asks for JSON without a schema; tool_choice none and required map to the modes', () => {
    const json = convertToGeminiRequest({
      ...base,
      messages: [{ role: 'user', content: 'x' }],
      body: { ...base.body, response_format: { type: 'json_object' } },
    });
    assert.deepEqual(json['generationConfig'], { temperature: 0.7, responseMimeType: 'application/json' });
    const tools = [{ type: 'function' as const, function: { name: 'f' } }];
    for (const [choice, mode] of [
      ['none', 'NONE'],
      ['required', 'ANY'],
    ] as const) {
      const body = convertToGeminiRequest({
        ...base,
        messages: [{ role: 'user', content: 'x' }],
        body: { ...base.body, tools, tool_choice: choice },
      });
      assert.deepEqual(body['toolConfig'], { functionCallingConfig: { mode } });
    }
  });

  it('finish reasons, usage and a blocked prompt', () => {
    assert.equal(mapGeminiFinishReason('STOP', false), 'stop');
    assert.equal(mapGeminiFinishReason('STOP', true), 'tool_calls');
    assert.equal(mapGeminiFinishReason('MAX_TOKENS', false), 'length');
    for (const reason of ['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII'])
      assert.equal(mapGeminiFinishReason(reason, false), 'content_filter');
    assert.equal(mapGeminiFinishReason(undefined, false), null);
    assert.deepEqual(
      geminiUsage({
        promptTokenCount: 10,
        toolUsePromptTokenCount: 2,
        candidatesTokenCount: 5,
        thoughtsTokenCount: 7,
      }),
      {
        prompt_tokens: 12,
        completion_tokens: 12,
        total_tokens: 24,
        completion_tokens_details: { reasoning_tokens: 7 },
      },
    );
    const blocked = convertGeminiResponse(
      { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 3 } },
      'g',
    );
    assert.equal(blocked.choices[0]?.finish_reason, 'content_filter');
    assert.equal(blocked.choices[0]?.message.content, '');
    const thinking = convertGeminiResponse(
      {
        candidates: [
          {
            content: { parts: [{ text: 'plan…', thought: true }, { text: 'Answer' }] },
            finishReason: 'STOP',
          },
        ],
      },
      'g',
    );
    assert.equal(thinking.choices[0]?.message.content, 'Answer', 'thought summaries are not the answer');
  });
});
