import { httpRequest, keepAliveAgents, type HttpAnswer } from '../../platform/http.client.ts';
import { signPayload, SIGNATURE_HEADER } from '../../platform/signature.ts';
import type { OutboxEvent, Sink } from '../outbox.events.ts';

export interface HttpSinkOptions {
  /** The consumer's webhook, e.g. http://127.0.0.1:8080/v1/fulfillment/events. */
  url: string;
  /**
   * The consumer's batch webhook (…/v1/fulfillment/events/batch). When set, the relay delivers a
   * whole pass in one signed request; unset, one request per event (a consumer that only speaks
   * the single-event contract).
   */
  batchUrl?: string;
  /** Shared HMAC secret; the consumer rejects anything it cannot verify. */
  secret: string;
  /** Per request; keep it below the relay lease so a hung consumer cannot outlive the claim. */
  timeoutMs: number;
}

// Only this much of an error body is kept in outbox.last_error.
const MAX_ERROR_BODY_CHARS = 300;
// A relay delivers one claimed batch concurrently; batches are at most this large.
const MAX_SOCKETS = 64;
// A batch answer lists every event's outcome: read it whole, but not without bound.
const MAX_BATCH_ANSWER_CHARS = 1024 * 1024;

type Post = (url: URL, body: string, maxChars: number) => Promise<HttpAnswer>;

function poster(options: HttpSinkOptions): { post: Post; agents: ReturnType<typeof keepAliveAgents> } {
  const agents = keepAliveAgents(MAX_SOCKETS);
  const post: Post = (target, body, maxChars) =>
    httpRequest(
      target,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signPayload(options.secret, body) },
        body,
        timeoutMs: options.timeoutMs,
        maxChars,
      },
      agents,
    );
  return { post, agents };
}

const is2xx = (status: number): boolean => status >= 200 && status <= 299;
const refused = (answer: HttpAnswer): Error =>
  new Error(`webhook answered HTTP ${answer.status}: ${answer.text.slice(0, MAX_ERROR_BODY_CHARS)}`);

/** The batch answer, per event in the order sent; an answer that does not name an event refuses it. */
function outcomesOf(events: readonly OutboxEvent[], text: string): (Error | null)[] {
  const parsed = JSON.parse(text) as { results?: { event_id?: unknown; effect?: unknown; detail?: unknown }[] };
  const byId = new Map((parsed.results ?? []).map((r) => [String(r.event_id), r]));
  return events.map((event) => {
    const result = byId.get(event.event_id);
    if (!result) return new Error(`the batch answer has no outcome for event ${event.event_id}`);
    if (result.effect === 'APPLIED' || result.effect === 'DUPLICATE' || result.effect === 'STALE') return null;
    return new Error(`consumer could not apply event ${event.event_id}: ${String(result.detail ?? result.effect)}`);
  });
}

/**
 * POSTs each event as signed JSON; any 2xx is the acknowledgement, anything else is a failed
 * attempt. With `batchUrl`, a pass goes as one signed `{events}` body and each event is
 * acknowledged by its own outcome. node:http with a keep-alive agent rather than fetch: it costs a
 * fraction of the CPU per request (docs/benchmarks/journal.md), and the relay shares its event loop with
 * the API.
 */
export function createHttpSink(options: HttpSinkOptions): Sink {
  const url = new URL(options.url);
  const { post, agents } = poster(options);
  const sink: Sink = {
    async deliver(event: OutboxEvent): Promise<void> {
      const answer = await post(url, JSON.stringify(event), MAX_ERROR_BODY_CHARS);
      if (!is2xx(answer.status)) throw refused(answer);
    },
    async close(): Promise<void> {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
  if (options.batchUrl === undefined) return sink;
  const batchUrl = new URL(options.batchUrl);
  sink.deliverBatch = async (events) => {
    const answer = await post(batchUrl, JSON.stringify({ events }), MAX_BATCH_ANSWER_CHARS);
    if (!is2xx(answer.status)) throw refused(answer);
    return outcomesOf(events, answer.text);
  };
  return sink;
}
