import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJson } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  NodeTracerProvider,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

// Loaded only when tracing.ts's startTracing finds OpenTelemetry's variables set. Everything is
// read from those variables, as every OpenTelemetry SDK reads them: the exporter and its protocol
// here; the endpoint, headers and timeout by the OTLP exporter; the sampler (OTEL_TRACES_SAMPLER,
// _ARG) by the provider; OTEL_BSP_SCHEDULE_DELAY and the queue sizes by the batch processor.

function exporterOf(env: NodeJS.ProcessEnv): SpanExporter {
  const kind = (env.OTEL_TRACES_EXPORTER ?? 'otlp').split(',')[0]!.trim().toLowerCase();
  if (kind === 'console') return new ConsoleSpanExporter();
  if (kind !== 'otlp') throw new Error(`OTEL_TRACES_EXPORTER=${kind} is not supported here (otlp, console or none)`);
  const protocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ??
    env.OTEL_EXPORTER_OTLP_PROTOCOL ??
    'http/protobuf'
  ).trim();
  if (protocol === 'http/json') return new OtlpJson();
  if (protocol === 'http/protobuf') return new OtlpProto();
  throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported here (http/protobuf or http/json)`);
}

/** Registers a global tracer provider, the AsyncLocalStorage context manager and W3C propagation. */
export function registerSdk(env: NodeJS.ProcessEnv): () => Promise<void> {
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over our default name.
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'flashpay' }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(exporterOf(env))],
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  return () => provider.shutdown();
}
