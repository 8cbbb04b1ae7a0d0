import { ConfigError } from '../../config/load-config.ts';

/** How traces are exported, read from the standard OTEL_* variables; undefined when tracing is off. */
export interface TraceSettings {
  /** The full OTLP/HTTP traces address (`…/v1/traces`). */
  url: string;
  protocol: 'http/protobuf' | 'http/json';
  /** The share of new traces recorded (a client's sampled flag is followed). */
  ratio: number;
  /** Whether a client's sampling decision is followed (the `parentbased_*` samplers). */
  parentBased: boolean;
  /** Spans waiting for export beyond this many are dropped (the request never waits). */
  maxQueueSize: number;
  scheduledDelayMs: number;
}

type Env = Readonly<Record<string, string | undefined>>;

const SAMPLERS: Readonly<Record<string, { ratio?: number; parentBased: boolean }>> = {
  always_on: { ratio: 1, parentBased: false },
  always_off: { ratio: 0, parentBased: false },
  traceidratio: { parentBased: false },
  parentbased_always_on: { ratio: 1, parentBased: true },
  parentbased_always_off: { ratio: 0, parentBased: true },
  parentbased_traceidratio: { parentBased: true },
};

/**
 * Tracing is on when an OTLP endpoint is named (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, or
 * OTEL_EXPORTER_OTLP_ENDPOINT with `/v1/traces` added) and neither OTEL_SDK_DISABLED=true nor
 * OTEL_TRACES_EXPORTER=none says otherwise. Invalid values throw (a start-up configuration error).
 */
export function traceSettings(env: Env): TraceSettings | undefined {
  if (env['OTEL_SDK_DISABLED']?.trim().toLowerCase() === 'true') return undefined;
  const exporter = env['OTEL_TRACES_EXPORTER']?.trim().toLowerCase();
  if (exporter === 'none') return undefined;
  if (exporter && exporter !== 'otlp')
    throw new ConfigError(`OTEL_TRACES_EXPORTER: only "otlp" and "none" are supported, not "${exporter}"`);
  const url = tracesUrl(env);
  if (url === undefined) return undefined;
  const protocol = (
    env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'] ??
    env['OTEL_EXPORTER_OTLP_PROTOCOL'] ??
    'http/protobuf'
  ).trim();
  if (protocol !== 'http/protobuf' && protocol !== 'http/json')
    throw new ConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" or "http/json", not "${protocol}"`);
  const name = (env['OTEL_TRACES_SAMPLER'] ?? 'parentbased_always_on').trim().toLowerCase();
  const sampler = SAMPLERS[name];
  if (!sampler) throw new ConfigError(`OTEL_TRACES_SAMPLER: unsupported sampler "${name}"`);
  const ratio = sampler.ratio ?? ratioOf(env['OTEL_TRACES_SAMPLER_ARG']);
  return {
    url,
    protocol,
    ratio,
    parentBased: sampler.parentBased,
    maxQueueSize: positive(env['OTEL_BSP_MAX_QUEUE_SIZE'], 2048, 'OTEL_BSP_MAX_QUEUE_SIZE'),
    scheduledDelayMs: positive(env['OTEL_BSP_SCHEDULE_DELAY'], 5000, 'OTEL_BSP_SCHEDULE_DELAY'),
  };
}

function tracesUrl(env: Env): string | undefined {
  const own = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']?.trim();
  if (own) return checkedUrl(own, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const base = env['OTEL_EXPORTER_OTLP_ENDPOINT']?.trim();
  if (!base) return undefined;
  return checkedUrl(`${base.replace(/\/+$/, '')}/v1/traces`, 'OTEL_EXPORTER_OTLP_ENDPOINT');
}

function checkedUrl(value: string, variable: string): string {
  const url = URL.parse(value);
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new ConfigError(`${variable}: not an http(s) URL: "${value}"`);
  return value;
}

function ratioOf(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return 1;
  const ratio = Number(value);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1)
    throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG: a number from 0 to 1, not "${value}"`);
  return ratio;
}

function positive(value: string | undefined, fallback: number, variable: string): number {
  if (value === undefined || value.trim() === '') return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number <= 0)
    throw new ConfigError(`${variable}: a positive integer, not "${value}"`);
  return number;
}
