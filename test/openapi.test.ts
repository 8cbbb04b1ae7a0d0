import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { FRONT_DOOR_PATHS } from '../src/http/chat-endpoint.ts';
import { BACKENDS, type OpenedBackend } from './helpers/backends.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

/** Fastify's `/:id` and a trailing `*` as OpenAPI path templates. */
const template = (url: string): string =>
  url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{path}') || '/';

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

// The wire contract is declared once, on the routes: /openapi.json is built from those declarations, is a valid
// OpenAPI 3.1 document, and leaves no route out.
describe('GET /openapi.json', () => {
  let opened: OpenedBackend;
  let server: TestServer;
  const registered: { method: string; url: string }[] = [];
  before(async () => {
    opened = await BACKENDS[0]!.open();
    server = await startTestServer({
      backend: opened,
      beforeReady: (app) =>
        app.addHook('onRoute', (route) => {
          for (const method of [route.method].flat())
            if (method !== 'HEAD') registered.push({ method, url: route.url });
        }),
    });
  });
  after(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  it('is public, cacheable and validates as OpenAPI 3.1', async () => {
    const response = await fetch(`${server.url}/openapi.json`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    assert.match(response.headers.get('cache-control') ?? '', /public, max-age=\d+/);
    const document = (await response.json()) as { openapi: string };
    assert.equal(document.openapi, '3.1.0');
    const validator = new Validator();
    const result = await validator.validate(document);
    assert.deepEqual(result.errors, undefined);
    assert.equal(result.valid, true);
    assert.equal(validator.version, '3.1');
  });

  it('describes every registered route and every front door', async () => {
    const { body } = await server.call('GET', '/openapi.json');
    const paths = body.paths as Record<string, Record<string, Operation>>;
    assert.ok(registered.length > 50, `only ${registered.length} routes seen`);
    const missing = registered.filter(({ method, url }) => !paths[template(url)]?.[method.toLowerCase()]);
    assert.deepEqual(missing, []);
    for (const door of FRONT_DOOR_PATHS) assert.ok(paths[door]?.['post'], door);
    for (const door of ['/v1/chat/completions', '/v1/responses', '/v1/messages', '/v1/messages/count_tokens'])
      assert.ok(paths[door]?.['post'], door);
    assert.ok(paths['/v1/models']?.['get'] && paths['/v1/models/{id}']?.['get']);
  });

  it('gives every answer a declared body: a JSON schema, or the media type of a page, feed or export', async () => {
    const { body } = await server.call('GET', '/openapi.json');
    const paths = body.paths as Record<string, Record<string, Operation>>;
    const undeclared: string[] = [];
    for (const [path, operations] of Object.entries(paths)) {
      if (path.startsWith('/assets/')) continue; // the dashboard's static files
      for (const [method, operation] of Object.entries(operations)) {
        const success = Object.entries(operation.responses).filter(([status]) => /^2/.test(status));
        const declared = success.some(
          ([, answer]) => answer.content && Object.keys(answer.content).length > 0,
        );
        if (!declared) undeclared.push(`${method.toUpperCase()} ${path}`);
      }
    }
    assert.deepEqual(undeclared, []);
    // The account API's JSON answers carry the schema the route serializes with.
    const account = paths['/api/account']!['get']!.responses['200']!.content!['application/json']!.schema as {
      properties: Record<string, unknown>;
    };
    assert.ok(account.properties['balance_usd'] && account.properties['email']);
  });
});
