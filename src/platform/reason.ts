import type { FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';

// Issue 48: an operator action that moves money or units (refund, cancel, wallet credit, return to
// stock) says why. The reason is kept in the append-only audit trail with the operator's tenant and
// `sub` (migration 182), so it has a bound there too: 1..500 characters, one non-blank among them.

export const REASON_MAX_CHARS = 500;

export const ReasonSchema = Type.String({
  minLength: 1,
  maxLength: REASON_MAX_CHARS,
  pattern: '\\S',
  description: `why the operator does this, for the audit trail (1..${REASON_MAX_CHARS} characters, not only spaces)`,
  examples: ['buyer called: parcel arrived damaged'],
});

export const ReasonBody = Type.Object(
  { reason: ReasonSchema },
  { additionalProperties: false, examples: [{ reason: 'buyer called: parcel arrived damaged' }] },
);
export type ReasonBody = Static<typeof ReasonBody>;

/**
 * preValidation: a POST sent with no body at all is validated as `{}`, so its answer names the
 * missing field (`body.reason is required`) rather than "body must be object".
 */
export async function emptyBodyAsObject(request: FastifyRequest): Promise<void> {
  if (request.body === undefined || request.body === null) request.body = {};
}
