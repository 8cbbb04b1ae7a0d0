import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { parseConfig } from '../../src/config/load-config.ts';
import { createServices } from '../../src/composition/services.ts';
import { createStore } from '../../src/store/store.ts';
import { BACKENDS } from '../helpers/backends.ts';

const PRODUCTION = {
  NODE_ENV: 'production',
  PUBLIC_URL: 'https://api.example',
  SMTP_URL: 'smtp://mail:25',
  TOLLGATE_TEST_PAYMENTS: 'true',
  TOLLGATE_ADMIN_KEY: 'tg-admin-private-webhooks-0123456789',
};

describe('webhooks to private addresses in production', () => {
  it('production refuses to start with TOLLGATE_WEBHOOK_ALLOW_PRIVATE=true unless also acknowledged', () => {
    assert.throws(
      () => parseConfig({}, { ...PRODUCTION, TOLLGATE_WEBHOOK_ALLOW_PRIVATE: 'true' }),
      /TOLLGATE_WEBHOOK_ALLOW_PRIVATE: true in production.*TOLLGATE_WEBHOOK_PRIVATE_IN_PRODUCTION=true/,
    );
    const acknowledged = parseConfig(
      {},
      {
        ...PRODUCTION,
        TOLLGATE_WEBHOOK_ALLOW_PRIVATE: 'true',
        TOLLGATE_WEBHOOK_PRIVATE_IN_PRODUCTION: 'true',
      },
    );
    assert.equal(acknowledged.webhookAllowPrivate, true);
    assert.equal(parseConfig({}, PRODUCTION).webhookAllowPrivate, false);
    // Outside production the setting needs no acknowledgement (tests and local receivers use it).
    assert.equal(parseConfig({}, { TOLLGATE_WEBHOOK_ALLOW_PRIVATE: 'true' }).webhookAllowPrivate, true);
  });

  it('whenever it is on, the start logs a warning that says what it allows; off, nothing', async () => {
    const opened = await BACKENDS[0]!.open();
    try {
      for (const [env, warned] of [
        [
          {
            ...PRODUCTION,
            TOLLGATE_WEBHOOK_ALLOW_PRIVATE: 'true',
            TOLLGATE_WEBHOOK_PRIVATE_IN_PRODUCTION: 'true',
          },
          true,
        ],
        [{ TOLLGATE_WEBHOOK_ALLOW_PRIVATE: 'true' }, true],
        [PRODUCTION, false],
      ] as const) {
        const lines: any[] = [];
        const sink = new Writable({
          write(chunk: Buffer, _encoding, done) {
            for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
            done();
          },
        });
        const services = createServices({
          config: parseConfig({}, env),
          store: createStore(opened.db),
          logger: pino({ level: 'info' }, sink),
        });
        const warning = lines.find((line) => /WEBHOOKS MAY REACH PRIVATE ADDRESSES/.test(line.msg));
        if (warned) {
          assert.equal(warning?.level, 40, JSON.stringify(env));
          assert.match(warning.msg, /loopback, private networks and cloud metadata/);
        } else assert.equal(warning, undefined);
        await services.close();
      }
    } finally {
      await opened.cleanup();
    }
  });
});
