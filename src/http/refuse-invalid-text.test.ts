import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { invalidTextAt, isStorableText } from './refuse-invalid-text.ts';

describe('invalidTextAt', () => {
  it('finds a NUL or an unpaired surrogate anywhere, keys included, and names where', () => {
    assert.equal(isStorableText('plain ✓ 😀'), true);
    assert.equal(isStorableText('a\u0000b'), false);
    assert.equal(isStorableText('\udc00'), false);
    assert.equal(invalidTextAt({ name: 'ok', allowed_models: ['a', 'b\u0000'] }), 'allowed_models[1]');
    assert.equal(invalidTextAt({ outer: { 'in\u0000ner': 1 } }), 'outer.in\u0000ner');
    assert.equal(invalidTextAt([{ a: '\ud800' }]), '[0].a');
    assert.equal(invalidTextAt('\u0000'), '');
    assert.equal(invalidTextAt({ id: 'ord_1', n: 5, ok: true, none: null }), undefined);
    assert.equal(invalidTextAt(undefined), undefined);
  });
});
