import type { FastifyPluginAsync, FastifySchema, RouteOptions } from 'fastify';
import type { RouteAuth } from './fastify-types.ts';
import { errorSchema } from './schemas/api.ts';
import { DOOR_DESCRIPTIONS } from './schemas/v1.ts';

type Json = Record<string, unknown>;

interface Operation {
  method: string;
  url: string;
  schema: FastifySchema | undefined;
  auth: RouteAuth | undefined;
}

/** Fastify's `/:id` and `/*` as OpenAPI path templates, with the names of the path parameters. */
function templateOf(url: string): { path: string; names: string[] } {
  const names: string[] = [];
  const path = url
    .replace(/:([A-Za-z0-9_]+)/g, (_match, name: string) => {
      names.push(name);
      return `{${name}}`;
    })
    .replace(/\*$/, () => {
      names.push('path');
      return '{path}';
    });
  return { path: path === '' ? '/' : path, names };
}

const SECURITY: Record<RouteAuth, Json[] | undefined> = {
  none: undefined,
  user: [{ apiKey: [] }, { session: [] }],
  admin: [{ apiKey: [] }, { session: [] }],
  any: [{ apiKey: [] }],
  session: [{ session: [] }],
};

/** Properties of an object schema as OpenAPI parameters `in` the query or the path. */
function parametersOf(schema: unknown, where: 'query' | 'path', names: readonly string[]): Json[] {
  const object = (schema ?? {}) as { properties?: Record<string, Json>; required?: readonly string[] };
  const properties = object.properties ?? {};
  if (where === 'path') {
    return names.map((name) => ({
      name,
      in: 'path',
      required: true,
      schema: properties[name] ?? { type: 'string' },
    }));
  }
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: 'query',
    required: object.required?.includes(name) ?? false,
    schema: property,
    ...(typeof property['description'] === 'string' ? { description: property['description'] } : {}),
  }));
}

const STATUS_TEXT: Record<string, string> = {
  '200': 'OK',
  '201': 'Created',
  '202': 'Accepted',
  '503': 'Service unavailable',
};

function responsesOf(schema: FastifySchema | undefined): Json {
  const declared = (schema?.response ?? {}) as Record<string, Json>;
  const responses: Json = {};
  for (const [status, body] of Object.entries(declared))
    responses[status] = {
      description: STATUS_TEXT[status] ?? `HTTP ${status}`,
      content: { 'application/json': { schema: body } },
    };
  if (Object.keys(responses).length === 0) {
    const produces = schema?.produces ?? [];
    responses['200'] = {
      description: 'OK',
      ...(produces.length > 0
        ? { content: Object.fromEntries(produces.map((type) => [type, { schema: { type: 'string' } }])) }
        : {}),
    };
  }
  responses['default'] = {
    description: "The spec's error object",
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
  return responses;
}

function operationOf(route: Operation): { path: string; method: string; operation: Json } {
  const { path, names } = templateOf(route.url);
  const schema = route.schema;
  const parameters = [
    ...parametersOf(schema?.params, 'path', names),
    ...parametersOf(schema?.querystring, 'query', names),
  ];
  const security = SECURITY[route.auth ?? 'none'];
  const operation: Json = {
    ...(schema?.summary !== undefined ? { summary: schema.summary } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(schema?.body !== undefined
      ? { requestBody: { required: true, content: { 'application/json': { schema: schema.body } } } }
      : {}),
    responses: responsesOf(schema),
    ...(security ? { security } : {}),
  };
  return { path, method: route.method.toLowerCase(), operation };
}

function doorOperation(path: string): Json {
  const door = DOOR_DESCRIPTIONS.get(path);
  const security =
    door?.auth === 'session'
      ? [{ session: [] }]
      : path.startsWith('/v1/messages')
        ? [{ anthropicKey: [] }, { apiKey: [] }]
        : [{ apiKey: [] }];
  return {
    summary: door?.summary ?? 'A front door',
    requestBody: {
      required: true,
      content: { 'application/json': { schema: door?.request ?? { type: 'object' } } },
    },
    responses: {
      '200': {
        description: 'OK',
        content: door?.answer ?? { 'application/json': { schema: { type: 'object' } } },
      },
      default: {
        description: "The door's error object (OpenAI's shape, or Anthropic's at the Anthropic doors)",
        content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } },
      },
    },
    security,
  };
}

/**
 * Collects every route as it is registered (Fastify's `onRoute`) and, once the app is ready, writes the
 * OpenAPI 3.1 document of them: paths, parameters, bodies and answers from each route's own schemas, the
 * front doors (served before Fastify) from their descriptions.
 */
export class OpenApiDocument {
  readonly #routes: Operation[] = [];
  readonly #doors: string[] = [];
  readonly #version: string;
  #text: string | undefined;

  constructor(version: string) {
    this.#version = version;
  }

  /** For `app.addHook('onRoute', ...)`. HEAD is left out: Fastify answers it beside every GET. */
  readonly onRoute = (route: RouteOptions): void => {
    for (const method of [route.method].flat())
      if (method !== 'HEAD')
        this.#routes.push({ method, url: route.url, schema: route.schema, auth: route.config?.auth });
  };

  /** A path answered outside Fastify: a front door taking POST. */
  addDoor(path: string): void {
    this.#doors.push(path);
  }

  /** The document (built once, on first use, after every route is registered). */
  json(): Json {
    const paths: Record<string, Json> = {};
    for (const route of this.#routes) {
      const { path, method, operation } = operationOf(route);
      (paths[path] ??= {})[method] = operation;
    }
    for (const door of this.#doors) (paths[door] ??= {})['post'] = doorOperation(door);
    return {
      openapi: '3.1.0',
      info: {
        title: 'Tollgate',
        version: this.#version,
        description:
          'The gateway (/v1: OpenAI-compatible chat completions and Responses, Anthropic Messages), the account API (/api) and the operator API (/api/admin).',
      },
      jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
      paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
      components: {
        schemas: { Error: errorSchema },
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'An API key (sk-...) or the admin key' },
          anthropicKey: {
            type: 'apiKey',
            in: 'header',
            name: 'x-api-key',
            description: "An API key as Anthropic's clients send it (the Messages doors)",
          },
          session: {
            type: 'apiKey',
            in: 'cookie',
            name: 'tollgate_session',
            description:
              "The dashboard's session (`__Host-tollgate_session` over TLS); changes also need X-CSRF-Token",
          },
        },
      },
    };
  }

  text(): string {
    return (this.#text ??= JSON.stringify(this.json()));
  }
}

/** `GET /openapi.json`: public, and the same until the next deploy. */
export const openApiRoutes: FastifyPluginAsync<{ document: OpenApiDocument }> = async (app, options) => {
  app.get(
    '/openapi.json',
    { schema: { summary: 'This document (OpenAPI 3.1)', produces: ['application/json'] } },
    async (_request, reply) =>
      reply
        .header('cache-control', 'public, max-age=300')
        .type('application/json; charset=utf-8')
        .send(options.document.text()),
  );
};
