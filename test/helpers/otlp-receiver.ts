import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One exported span, as the receiver decoded it (ids as hex). */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  /** OTLP's StatusCode: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** The address to give OTEL_EXPORTER_OTLP_ENDPOINT (the exporter adds /v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  /** Every request body as it arrived, to search for text that must not be there. */
  bodies: Buffer[];
  contentTypes: string[];
  close(): Promise<void>;
}

/** A small OTLP/HTTP traces receiver: decodes protobuf (by the OTLP .proto field numbers) and JSON bodies. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: Buffer[] = [];
  const contentTypes: string[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const type = request.headers['content-type'] ?? '';
      bodies.push(body);
      contentTypes.push(type);
      if (request.url === '/v1/traces')
        spans.push(...(type.includes('json') ? fromJson(JSON.parse(body.toString())) : fromProtobuf(body)));
      response.writeHead(200, { 'content-type': type });
      response.end(type.includes('json') ? '{}' : Buffer.alloc(0));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    contentTypes,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// --- JSON (OTLP/JSON: ids are hex strings, enums numbers, int64 may be strings) ---

interface JsonValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: JsonValue[] };
}

function fromJson(body: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const resourceSpans of body.resourceSpans ?? []) {
    const resource = jsonAttributes(resourceSpans.resource?.attributes);
    for (const scope of resourceSpans.scopeSpans ?? [])
      for (const span of scope.spans ?? [])
        out.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? '',
          name: span.name,
          kind: span.kind,
          attributes: jsonAttributes(span.attributes),
          statusCode: span.status?.code ?? 0,
          resource,
        });
  }
  return out;
}

function jsonAttributes(list: { key: string; value: JsonValue }[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, jsonValue(value)]));
}

function jsonValue(value: JsonValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(jsonValue);
  return undefined;
}

// --- Protobuf: a reader of the wire format, and the OTLP messages' field numbers ---

type Field = { number: number; wire: number; value: bigint | Buffer };

function fields(buffer: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buffer[at++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (at < buffer.length) {
    const tag = Number(varint());
    const wire = tag & 7;
    const number = tag >>> 3;
    if (wire === 0) out.push({ number, wire, value: varint() });
    else if (wire === 1) {
      out.push({ number, wire, value: buffer.subarray(at, at + 8) });
      at += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      out.push({ number, wire, value: buffer.subarray(at, at + length) });
      at += length;
    } else if (wire === 5) {
      out.push({ number, wire, value: buffer.subarray(at, at + 4) });
      at += 4;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const each = (buffer: Buffer, number: number): Buffer[] =>
  fields(buffer)
    .filter((field) => field.number === number)
    .map((field) => field.value as Buffer);
const one = (buffer: Buffer, number: number): Field | undefined =>
  fields(buffer).find((field) => field.number === number);

function fromProtobuf(body: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  // ExportTraceServiceRequest.resource_spans = 1; ResourceSpans.resource = 1, scope_spans = 2;
  // Resource.attributes = 1; ScopeSpans.spans = 2.
  for (const resourceSpans of each(body, 1)) {
    const resourceField = one(resourceSpans, 1);
    const resource = resourceField ? protoAttributes(each(resourceField.value as Buffer, 1)) : {};
    for (const scope of each(resourceSpans, 2))
      for (const span of each(scope, 2)) out.push(protoSpan(span, resource));
  }
  return out;
}

/** Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, attributes 9, status 15 (code 3). */
function protoSpan(span: Buffer, resource: Record<string, unknown>): ReceivedSpan {
  const hex = (number: number): string =>
    (one(span, number)?.value as Buffer | undefined)?.toString('hex') ?? '';
  const status = one(span, 15)?.value as Buffer | undefined;
  return {
    traceId: hex(1),
    spanId: hex(2),
    parentSpanId: hex(4),
    name: (one(span, 5)?.value as Buffer).toString(),
    kind: Number(one(span, 6)?.value ?? 0n),
    attributes: protoAttributes(each(span, 9)),
    statusCode: status ? Number(one(status, 3)?.value ?? 0n) : 0,
    resource,
  };
}

/** KeyValue: key 1, value 2. */
function protoAttributes(list: Buffer[]): Record<string, unknown> {
  return Object.fromEntries(
    list.map((pair) => [
      (one(pair, 1)?.value as Buffer).toString(),
      protoValue(one(pair, 2)?.value as Buffer),
    ]),
  );
}

/** AnyValue: string 1, bool 2, int 3, double 4 (fixed64), array 5 (ArrayValue.values 1). */
function protoValue(value: Buffer): unknown {
  const field = fields(value)[0];
  if (!field) return undefined;
  switch (field.number) {
    case 1:
      return (field.value as Buffer).toString();
    case 2:
      return field.value === 1n;
    case 3:
      return Number(BigInt.asIntN(64, field.value as bigint));
    case 4:
      return (field.value as Buffer).readDoubleLE(0);
    case 5:
      return each(field.value as Buffer, 1).map(protoValue);
    default:
      return undefined;
  }
}
