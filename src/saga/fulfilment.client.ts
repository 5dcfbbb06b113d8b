import type { StepResult } from './saga.runner.ts';
import { httpRequest } from '../platform/http.client.ts';

// The third party that issues the "ticket" (seed 002). Every call has a timeout; an answer we did
// not get (timeout, 5xx, reset) is UNKNOWN, never a refusal: only a 422 REFUSED is for good.
export interface FulfilmentClient {
  fulfil(key: string, orderId: string): Promise<StepResult>;
  /** What happened under `key`; undefined when nothing did (or the provider cannot say now). */
  query(key: string): Promise<StepResult | undefined>;
}

function reasonOf(error: unknown): string {
  const e = error as { name?: string; message?: string };
  return e.name === 'TimeoutError' || e.name === 'AbortError' ? 'timeout' : `io error (${e.message ?? 'unknown'})`;
}

function parsed<T>(text: string): T | Record<string, never> {
  try {
    return JSON.parse(text) as T;
  } catch {
    return {};
  }
}

export function fulfilmentClient(baseUrl: string, timeoutMs: number): FulfilmentClient {
  return {
    async fulfil(key, orderId) {
      try {
        const response = await httpRequest(`${baseUrl}/fulfilments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ key, order_id: orderId }),
          timeoutMs,
        });
        const body = parsed<{ result?: string; ref?: string }>(response.text);
        if (response.status === 200 && body.result === 'FULFILLED') return { status: 'DONE', receipt: body.ref ?? '' };
        if (response.status === 422 && body.result === 'REFUSED')
          return { status: 'REFUSED', receipt: 'refused by the provider' };
        return { status: 'UNKNOWN', error: `http ${response.status}` };
      } catch (error) {
        return { status: 'UNKNOWN', error: reasonOf(error) };
      }
    },
    async query(key) {
      try {
        const response = await httpRequest(`${baseUrl}/fulfilments/${encodeURIComponent(key)}`, { timeoutMs });
        if (response.status !== 200) return undefined;
        const body = JSON.parse(response.text) as { status?: string; ref?: string };
        if (body.status === 'FULFILLED') return { status: 'DONE', receipt: body.ref ?? '' };
        if (body.status === 'REFUSED') return { status: 'REFUSED', receipt: 'refused by the provider (query)' };
        return undefined;
      } catch {
        return undefined;
      }
    },
  };
}
