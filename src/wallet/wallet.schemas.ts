import { Type, type Static } from 'typebox';
import {
  ADMIN_AUTH,
  BODY_ERRORS,
  BUYER_AUTH,
  HEADERS,
  IDEMPOTENCY_KEY_HEADER,
  jsonAnswer,
  PARAM_ERRORS,
  problemAnswers,
  stringEnum,
} from '../platform/openapi.ts';
import { PRINCIPAL_ID_PATTERN } from '../platform/auth.ts';
import { ReasonSchema } from '../platform/reason.ts';

// A credit is a top-up or a gift card, not a treasury: 10^10 minor units keeps every sum exact.
const MAX_CREDIT = 10_000_000_000;
const AT_EXAMPLE = '2026-11-30T18:00:00.000Z';

export const UserParams = Type.Object({
  user: Type.String({
    minLength: 1,
    maxLength: 128,
    pattern: PRINCIPAL_ID_PATTERN,
    description: 'the buyer’s user id, as a token’s `sub` carries it: 1..128 visible ASCII characters',
    examples: ['alice'],
  }),
});
export type UserParams = Static<typeof UserParams>;
export const CreditBody = Type.Object(
  { amount: Type.Integer({ minimum: 1, maximum: MAX_CREDIT, description: 'minor units' }), reason: ReasonSchema },
  { additionalProperties: false, examples: [{ amount: 5000, reason: 'goodwill: late delivery' }] },
);
export type CreditBody = Static<typeof CreditBody>;

const keyed = { 'Idempotent-Replayed': HEADERS.replayed };

export const creditWalletSchema = {
  operationId: 'creditWallet',
  summary: 'Credit a buyer’s wallet',
  description:
    "A top-up, once per Idempotency-Key: a replay answers as the first time and moves no money. `reason` (1–500 characters) is required: without it 400 `VALIDATION` naming `body.reason`, nothing moves. The reason, the operator's tenant and `sub`, the amount and the time are kept in the append-only audit trail (`wallet_credit_actions`), after the key itself is purged. The same key sent by another admin (another `sub` or tenant) names their credit: 409 `IDEMPOTENCY_KEY_OF_ANOTHER_OPERATOR`, neither replayed nor made again.",
  tags: ['admin'],
  params: UserParams,
  body: CreditBody,
  docHeaders: IDEMPOTENCY_KEY_HEADER,
  response: {
    201: jsonAnswer(
      'The balance after the credit',
      Type.Object(
        { user: Type.String(), balance: Type.Integer(), transfer_id: Type.String() },
        { additionalProperties: false },
      ),
      {
        headers: { ...keyed, Location: { ...HEADERS.location, example: '/v1/admin/wallets/alice' } },
        example: { user: 'alice', balance: 5000, transfer_id: 'cr_2f1c9a7e' },
      },
    ),
    ...problemAnswers(
      [
        ...PARAM_ERRORS,
        ...BODY_ERRORS,
        ...ADMIN_AUTH,
        'IDEMPOTENCY_KEY_MISSING',
        'IDEMPOTENCY_KEY_INVALID',
        'REQUEST_IN_PROGRESS',
        'IDEMPOTENCY_KEY_REUSED',
        'IDEMPOTENCY_KEY_OF_ANOTHER_OPERATOR',
      ],
      keyed,
    ),
  },
};

export const ownWalletSchema = {
  operationId: 'getWallet',
  summary: 'The caller’s wallet balance',
  description: 'In minor units; pay with it by `POST /v1/orders/{id}/pay` `{method: "wallet"}`.',
  tags: ['wallet'],
  response: {
    200: jsonAnswer('The balance', Type.Object({ balance: Type.Integer() }, { additionalProperties: false }), {
      example: { balance: 3010 },
    }),
    ...problemAnswers(BUYER_AUTH),
  },
};

const Transfer = Type.Object(
  {
    transfer_id: Type.String(),
    kind: stringEnum(['CREDIT', 'DEBIT', 'REFUND']),
    amount: Type.Integer(),
    order_id: Type.Optional(Type.String()),
    at: Type.String({ format: 'date-time' }),
    operator: Type.Optional(Type.String({ description: "a credit's operator (their `sub`), from the audit trail" })),
    operator_tenant: Type.Optional(Type.String({ description: "a credit's operator's tenant" })),
    reason: Type.Optional(Type.String({ description: 'why the operator credited' })),
  },
  { additionalProperties: false },
);

export const adminWalletSchema = {
  operationId: 'adminGetWallet',
  summary: 'A buyer’s wallet and its transfers',
  description: 'The balance is the sum of the transfers (reconciliation checks it).',
  tags: ['admin'],
  params: UserParams,
  response: {
    200: jsonAnswer(
      'The wallet',
      Type.Object(
        { user: Type.String(), balance: Type.Integer(), transfers: Type.Array(Transfer) },
        { additionalProperties: false },
      ),
      {
        example: {
          user: 'alice',
          balance: 3010,
          transfers: [
            {
              transfer_id: 'credit:top-1',
              kind: 'CREDIT',
              amount: 5000,
              at: AT_EXAMPLE,
              operator: 'ops-anna',
              operator_tenant: 'tenant-a',
              reason: 'goodwill: late delivery',
            },
            { transfer_id: 'db_7c1e', kind: 'DEBIT', amount: 1990, order_id: 'ord_7c1e2b9f4a', at: AT_EXAMPLE },
          ],
        },
      },
    ),
    ...problemAnswers([...PARAM_ERRORS, ...ADMIN_AUTH]),
  },
};
