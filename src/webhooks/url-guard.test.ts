import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../shared/gateway-error.ts';
import { checkWebhookUrl, isPublicAddress } from './url-guard.ts';

/** The refusal's message, after asserting it is a 400 that names `url`. */
async function refusal(raw: string, allowPrivate = false): Promise<string> {
  try {
    await checkWebhookUrl(raw, allowPrivate);
  } catch (error) {
    assert.ok(error instanceof GatewayError, String(error));
    assert.equal(error.code, 'invalid_request');
    assert.equal(error.param, 'url');
    return error.message;
  }
  assert.fail(`${raw} was accepted`);
}

describe('webhook URL guard', () => {
  it('refuses what is not https, carries credentials or uses another port, naming url', async () => {
    assert.match(await refusal('not a url'), /absolute URL/);
    assert.match(await refusal('http://93.184.215.14/hooks'), /https/);
    assert.match(await refusal('https://user:pw@93.184.215.14/hooks'), /credentials/);
    assert.match(await refusal('https://93.184.215.14:8443/hooks'), /port 80 or 443/);
  });

  it('refuses loopback and private addresses, and says so', async () => {
    for (const raw of [
      'https://127.0.0.1/h',
      'https://10.1.2.3/h',
      'https://[::1]/h',
      'https://169.254.169.254/h',
    ])
      assert.match(await refusal(raw), /public addresses only/, raw);
  });

  it('tells a host that does not resolve from one that resolves to a private address', async () => {
    // .invalid never resolves (RFC 2606), with or without a network.
    assert.match(await refusal('https://nowhere.invalid/hooks'), /nowhere\.invalid does not resolve/);
  });

  it('accepts a public address on 443', async () => {
    assert.equal((await checkWebhookUrl('https://93.184.215.14/hooks', false)).hostname, '93.184.215.14');
    assert.equal(isPublicAddress('93.184.215.14'), true);
  });
});
