import http from 'node:http';
import type { AddressInfo } from 'node:net';

// A real OTLP/HTTP trace receiver on port 0, as a collector is to the service: it accepts
// `POST /v1/traces` in http/json (decoded into spans) and http/protobuf (kept as bytes).

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's numbers: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
}

export const KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values?: OtlpValue[] };
}
type OtlpAttributes = { key: string; value: OtlpValue }[] | undefined;

function valueOf(value: OtlpValue): unknown {
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(valueOf);
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.stringValue ?? value.boolValue ?? value.doubleValue;
}

const attributesOf = (list: OtlpAttributes) => Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));

interface OtlpTraces {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttributes };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: OtlpAttributes;
        links?: { traceId: string; spanId: string }[];
      }[];
    }[];
  }[];
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Bodies of http/protobuf exports, as received. */
  protobuf: Buffer[];
  /** Every request, by content type. */
  requests: string[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const receiver: Omit<OtlpReceiver, 'url' | 'close'> = { spans: [], protobuf: [], requests: [] };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const type = String(request.headers['content-type'] ?? '');
      receiver.requests.push(`${request.method} ${request.url} ${type}`);
      if (request.method !== 'POST' || request.url !== '/v1/traces') return response.writeHead(404).end();
      const body = Buffer.concat(chunks);
      if (type.startsWith('application/x-protobuf')) {
        receiver.protobuf.push(body);
        return response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      }
      const parsed = JSON.parse(body.toString('utf8')) as OtlpTraces;
      for (const resource of parsed.resourceSpans ?? []) {
        const service = String(attributesOf(resource.resource?.attributes)['service.name'] ?? '');
        for (const scope of resource.scopeSpans ?? [])
          for (const span of scope.spans ?? [])
            receiver.spans.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? '',
              name: span.name,
              kind: span.kind,
              attributes: attributesOf(span.attributes),
              links: (span.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
            });
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ...receiver,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
