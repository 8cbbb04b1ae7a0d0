import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../core/gateway-error.ts';
import { checkWebhookUrl, createGuardedLookup, isPublicAddress, type Resolve } from './url-guard.ts';

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

  it('refuses every IPv6 form that embeds or tunnels to an IPv4 address, and reserved IPv6', async () => {
    for (const host of [
      '::7f00:1', // IPv4-compatible 127.0.0.1
      '::127.0.0.1',
      '::ffff:127.0.0.1', // IPv4-mapped, dotted and hex
      '::ffff:7f00:1',
      '::ffff:a9fe:a9fe', // 169.254.169.254
      '0:0:0:0:0:ffff:0a00:0001',
      '::ffff:0:7f00:1', // IPv4-translated (SIIT)
      '64:ff9b::7f00:1', // NAT64, well-known and local-use
      '64:ff9b:1::7f00:1',
      '64:ff9b::8.8.8.8',
      '2002:7f00:1::1', // 6to4
      '2002::1',
      '2001:0:4136:e378:8000:63bf:80ff:fffe', // Teredo
      '2001::1',
      'fec0::1', // site-local
      'fc00::1',
      'fd12:3456::1',
      'fe80::1',
      'ff02::1',
      '100::1', // discard-only
      '::',
      '::1',
      '0:0:0:0:0:0:0:1',
    ]) {
      assert.equal(isPublicAddress(host), false, host);
      assert.match(await refusal(`https://[${host}]/h`), /public addresses only/, host);
    }
    for (const host of [
      '2606:4700:4700::1111',
      '2a00:1450:4001:80b::200e',
      '::ffff:8.8.8.8',
      '::ffff:808:808',
    ])
      assert.equal(isPublicAddress(host), true, host);
    assert.equal(isPublicAddress('192.88.99.1'), false, '6to4 relay anycast');
    assert.equal(isPublicAddress('not an address'), false);
  });

  it('checks what a name resolves to when saved, with the resolver it is given', async () => {
    const resolve: Resolve = async (host) =>
      host === 'inside.test'
        ? [{ address: '::ffff:7f00:1', family: 6 }]
        : [{ address: '93.184.215.14', family: 4 }];
    await assert.rejects(
      checkWebhookUrl('https://inside.test/h', false, [443], resolve),
      /public addresses only/,
    );
    assert.equal(
      (await checkWebhookUrl('https://outside.test/h', false, [443], resolve)).hostname,
      'outside.test',
    );
    // With private targets allowed nothing is looked up.
    assert.equal(
      (await checkWebhookUrl('http://inside.test/h', true, 'any', resolve)).hostname,
      'inside.test',
    );
  });

  it("the connection's lookup keeps only public addresses, and refuses a name with none", async () => {
    const answers: Record<string, { address: string; family: number }[]> = {
      mixed: [
        { address: '127.0.0.1', family: 4 },
        { address: '64:ff9b:1::7f00:1', family: 6 },
        { address: '93.184.215.14', family: 4 },
      ],
      inside: [
        { address: '10.0.0.7', family: 4 },
        { address: '::7f00:1', family: 6 },
      ],
    };
    const lookup = createGuardedLookup(false, async (host) => answers[host] ?? []);
    const ask = (host: string, all: boolean) =>
      new Promise<{ error: NodeJS.ErrnoException | null; result: unknown }>((resolve) =>
        lookup(host, { all }, (error, address, family) =>
          resolve({ error, result: all ? address : { address, family } }),
        ),
      );
    assert.deepEqual((await ask('mixed', true)).result, [{ address: '93.184.215.14', family: 4 }]);
    assert.deepEqual((await ask('mixed', false)).result, { address: '93.184.215.14', family: 4 });
    const refused = await ask('inside', false);
    assert.equal(refused.error?.code, 'EPRIVATEADDRESS');
    assert.match(refused.error.message, /resolves only to private addresses/);
    const allowed = createGuardedLookup(true, async (host) => answers[host] ?? []);
    await new Promise<void>((resolve) =>
      allowed('inside', { all: false }, (error, address) => {
        assert.equal(error, null);
        assert.equal(address, '10.0.0.7');
        resolve();
      }),
    );
  });
});
