import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { traceSettings } from './trace-settings.ts';

describe('trace settings from OTEL_* variables', () => {
  it('are off without an endpoint, or when the SDK or the exporter is turned off', () => {
    assert.equal(traceSettings({}), undefined);
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    assert.equal(traceSettings({ ...on, OTEL_SDK_DISABLED: 'true' }), undefined);
    assert.equal(traceSettings({ ...on, OTEL_TRACES_EXPORTER: 'none' }), undefined);
  });

  it('add /v1/traces to the base endpoint, and take the traces endpoint as it is', () => {
    assert.equal(
      traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })?.url,
      'http://c:4318/v1/traces',
    );
    assert.equal(
      traceSettings({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://t.example/otlp/traces',
      })?.url,
      'https://t.example/otlp/traces',
    );
  });

  it('read the protocol, the sampler and its ratio, and the queue', () => {
    const settings = traceSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_BSP_MAX_QUEUE_SIZE: '64',
    });
    assert.deepEqual(settings, {
      url: 'http://c:4318/v1/traces',
      protocol: 'http/json',
      ratio: 0.25,
      parentBased: true,
      maxQueueSize: 64,
      scheduledDelayMs: 5000,
    });
    const defaults = traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })!;
    assert.equal(defaults.protocol, 'http/protobuf');
    assert.equal(defaults.ratio, 1);
    assert.equal(defaults.parentBased, true);
    assert.equal(
      traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_TRACES_SAMPLER: 'always_off' })!.ratio,
      0,
    );
  });

  it('refuse what they cannot honour, naming the variable', () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    assert.throws(
      () => traceSettings({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
      /OTEL_EXPORTER_OTLP_PROTOCOL/,
    );
    assert.throws(
      () => traceSettings({ ...on, OTEL_TRACES_SAMPLER: 'jaeger_remote' }),
      /OTEL_TRACES_SAMPLER/,
    );
    assert.throws(
      () => traceSettings({ ...on, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }),
      /OTEL_TRACES_SAMPLER_ARG/,
    );
    assert.throws(
      () => traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }),
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
    assert.throws(() => traceSettings({ ...on, OTEL_TRACES_EXPORTER: 'zipkin' }), /OTEL_TRACES_EXPORTER/);
  });
});
