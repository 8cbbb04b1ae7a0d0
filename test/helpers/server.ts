import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Mail, Mailer } from '../../src/accounts/mailer.ts';
import { createApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config/load-config.ts';
import type { Config, PlanId } from '../../src/core/config.ts';
import { createServices, type Services, type ServicesOptions } from '../../src/composition/services.ts';
import type { Clock } from '../../src/core/ids.ts';
import { createStore } from '../../src/store/store.ts';
import type { OpenedBackend } from './backends.ts';

export const ADMIN_KEY = 'tg-admin-test-key-0123456789abcdef';

export interface Registered {
  accountId: string;
  key: string;
  keyId: string;
}

export interface TestServer {
  url: string;
  services: Services;
  app: FastifyInstance;
  mails: Mail[];
  /** Registers an account; resolves to its id and first key's secret. */
  register(email?: string): Promise<Registered>;
  /** Registers an account and moves it to `plan` with the admin key (throws if either step fails). */
  registerOn(plan: PlanId, email?: string): Promise<Registered>;
  /** fetch against the server with a bearer key and a JSON body. */
  call(
    method: string,
    path: string,
    options?: { key?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  backend: OpenedBackend;
  /** A second instance over the same data opens its own connection. */
  ownConnection?: boolean;
  env?: Record<string, string>;
  yaml?: Record<string, unknown>;
  clock?: Clock;
  extra?: Partial<ServicesOptions>;
}

let emailCounter = 0;

/** Starts the real HTTP server on a free loopback port over the given backend. */
export async function startTestServer(options: TestServerOptions): Promise<TestServer> {
  const config: Config = parseConfig(options.yaml ?? {}, {
    TOLLGATE_ADMIN_KEY: ADMIN_KEY,
    PORT: '0',
    TOLLGATE_WEBHOOK_ALLOW_PRIVATE: 'true',
    ...options.env,
  });
  const db = options.ownConnection ? options.backend.reopen() : options.backend.db;
  const store = createStore(db);
  const mails: Mail[] = [];
  const mailer: Mailer = { send: async (mail) => void mails.push(mail) };
  const logger = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });
  const services = createServices({
    config,
    store,
    logger,
    mailer,
    ...(options.clock ? { clock: options.clock } : {}),
    ...options.extra,
  });
  await services.accounts.ensureAdminKey();
  const app = createApp(services);
  await services.start();
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  const call: TestServer['call'] = async (method, path, callOptions = {}) => {
    const headers: Record<string, string> = { ...callOptions.headers };
    if (callOptions.key) headers['authorization'] = `Bearer ${callOptions.key}`;
    if (callOptions.body !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(`${url}${path}`, {
      method,
      headers,
      ...(callOptions.body !== undefined
        ? { body: typeof callOptions.body === 'string' ? callOptions.body : JSON.stringify(callOptions.body) }
        : {}),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: the raw text
    }
    return { status: response.status, body, headers: response.headers };
  };

  const register: TestServer['register'] = async (
    email = `user${++emailCounter}-${Date.now()}@example.com`,
  ) => {
    const response = await call('POST', '/api/auth/register', {
      body: { email, password: 'correct horse battery' },
    });
    if (response.status !== 201)
      throw new Error(`register failed: ${response.status} ${JSON.stringify(response.body)}`);
    return {
      accountId: response.body.account.id,
      key: response.body.api_key.key,
      keyId: response.body.api_key.id,
    };
  };

  return {
    url,
    services,
    app,
    mails,
    call,
    register,
    async registerOn(plan, email) {
      const registered = await register(email);
      const moved = await call('PUT', `/api/admin/accounts/${registered.accountId}/plan`, {
        key: ADMIN_KEY,
        body: { plan },
      });
      if (moved.status !== 200)
        throw new Error(`setting plan ${plan} failed: ${moved.status} ${JSON.stringify(moved.body)}`);
      return registered;
    },
    async close() {
      await app.close();
      await services.close();
      if (options.ownConnection) await db.close();
    },
  };
}
