import type { IncomingHttpHeaders } from 'node:http';
import { type Context, ROOT_CONTEXT } from '@opentelemetry/api';
import { parseKeyPairsIntoRecord, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';
import { RequestTrace, type TraceKit } from './request-trace.ts';
import { type TraceSettings, traceSettings } from './trace-settings.ts';

/** Tracing, when it is on: a trace per request, and the export's end at shutdown. */
export interface Tracing {
  /** A request's trace, continuing the client's `traceparent` when it sent one. */
  start(headers: IncomingHttpHeaders, door: string, requestId: string, arrivedAt: number): RequestTrace;
  /** Exports what is waiting (bounded by the exporter's time limit) and stops. */
  close(): Promise<void>;
}

/** The longest a shutdown waits for the last spans' export. */
const CLOSE_MS = 3_000;

const getter = {
  keys: (carrier: IncomingHttpHeaders): string[] => Object.keys(carrier),
  get: (carrier: IncomingHttpHeaders, key: string): string | string[] | undefined => carrier[key],
};

/**
 * Tracing as the OTEL_* variables in `env` configure it; undefined when they leave it off. The SDK is used
 * without its global registration (no context manager, no global provider): each request's context is handed on
 * explicitly, so tracing costs nothing where it is off and several gateways can share a process (tests).
 */
export function createTracing(
  env: Readonly<Record<string, string | undefined>>,
  providerTypes: ReadonlyMap<string, string>,
  logger: Logger,
  version: string,
): Tracing | undefined {
  const settings = traceSettings(env);
  if (!settings) return undefined;
  const exporter =
    settings.protocol === 'http/json'
      ? new JsonExporter({ url: settings.url })
      : new ProtobufExporter({ url: settings.url });
  const processor = new BatchSpanProcessor({
    exporter,
    maxQueueSize: settings.maxQueueSize,
    maxExportBatchSize: Math.min(512, settings.maxQueueSize),
    scheduledDelayMillis: settings.scheduledDelayMs,
  });
  const provider = new TracerProvider({
    resource: resourceFromAttributes(resourceAttributes(env, version)),
    sampler: samplerOf(settings),
    spanProcessors: [processor],
  });
  const kit: TraceKit = {
    tracer: provider.getTracer('tollgate', version),
    propagator: new W3CTraceContextPropagator(),
    providerTypes,
  };
  logger.info(
    { url: settings.url, protocol: settings.protocol, ratio: settings.ratio },
    'traces are exported',
  );
  return {
    start(headers, door, requestId, arrivedAt) {
      const parent: Context =
        headers['traceparent'] === undefined
          ? ROOT_CONTEXT
          : kit.propagator.extract(ROOT_CONTEXT, headers, getter);
      return new RequestTrace(kit, parent, door, requestId, arrivedAt);
    },
    async close() {
      // A collector that does not answer must not hold the drain: what it has not taken by then is lost.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_MS).unref()));
      await Promise.race([
        provider
          .shutdown()
          .catch((error: unknown) => logger.warn({ err: error }, 'trace export did not finish')),
        late.then(() => logger.warn('trace export did not finish before shutdown: the rest is dropped')),
      ]);
      clearTimeout(timer);
    },
  };
}

function samplerOf(settings: TraceSettings): Sampler {
  const root: Sampler =
    settings.ratio >= 1
      ? new AlwaysOnSampler()
      : settings.ratio <= 0
        ? new AlwaysOffSampler()
        : new TraceIdRatioBasedSampler(settings.ratio);
  return settings.parentBased ? new ParentBasedSampler({ root }) : root;
}

/** OTEL_RESOURCE_ATTRIBUTES, with OTEL_SERVICE_NAME over its service.name, and `tollgate` when neither names one. */
function resourceAttributes(
  env: Readonly<Record<string, string | undefined>>,
  version: string,
): Record<string, string> {
  const attributes: Record<string, string> = {
    'service.name': 'tollgate',
    'service.version': version,
    'telemetry.sdk.language': 'nodejs',
    ...parseKeyPairsIntoRecord(env['OTEL_RESOURCE_ATTRIBUTES']),
  };
  const name = env['OTEL_SERVICE_NAME']?.trim();
  if (name) attributes['service.name'] = name;
  return attributes;
}
