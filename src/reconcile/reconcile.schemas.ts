import { Type, type Static } from 'typebox';
import { ADMIN_AUTH, jsonAnswer, nullable, problemAnswers, stringEnum, type SameShape } from '../platform/openapi.ts';
import type { ReconciliationReport as Report } from './reconcile.service.ts';
import { GLOBAL_CLASSES, ORDER_CLASSES } from './reconcile.rules.ts';

export const ReconciliationReport = Type.Object(
  {
    ok: Type.Boolean({ description: 'no mismatch and nothing pending' }),
    pending: Type.Integer({ description: 'orders still converging (not judged)' }),
    pending_orders: Type.Array(
      Type.Object({ order_id: Type.String(), status: Type.String() }, { additionalProperties: false }),
    ),
    mismatches: Type.Array(
      Type.Object(
        {
          order_id: Type.String(),
          status: nullable(Type.String()),
          class: stringEnum([...ORDER_CLASSES, ...GLOBAL_CLASSES], {
            description: 'docs/reconciliation.md says what each means',
          }),
          detail: Type.String(),
        },
        { additionalProperties: false },
      ),
    ),
    statuses: Type.Record(Type.String(), Type.Integer(), { description: 'order count by status' }),
    totals: Type.Object(
      {
        channel_net: Type.Integer(),
        wallet_net: Type.Integer({ description: 'money taken from wallets for orders, net of refunds' }),
        paid_sum: Type.Integer(),
        confirmed: Type.Integer(),
        paid: Type.Integer(),
        drift: Type.Integer(),
      },
      { additionalProperties: false },
    ),
    events: Type.Object(
      {
        paid_without_event: Type.Integer(),
        terminal_without_event: Type.Integer(),
        duplicate_shipments: Type.Integer(),
        shipped_without_paid: Type.Integer(),
        lines_disagree: Type.Integer({
          description: 'orders whose event or shipment names other lines than the order holds (at most 100)',
        }),
        pending: Type.Integer(),
        dead: Type.Integer(),
      },
      { additionalProperties: false },
    ),
    pass: Type.Optional(
      stringEnum(['full', 'incremental'], {
        description: 'full: every order and the whole statement; incremental: what changed',
      }),
    ),
    scanned: Type.Optional(
      Type.Object(
        {
          orders: Type.Integer({ description: 'order rows this pass read' }),
          statement_lines: Type.Integer({ description: 'provider statement lines this pass read' }),
        },
        { additionalProperties: false },
      ),
    ),
    review: Type.Optional(
      Type.Array(
        Type.Object(
          {
            order_id: Type.String(),
            class: Type.String({ description: 'the mismatch the statement showed' }),
            query: Type.String({ description: "the provider's answer to a query for this order" }),
            detail: Type.String(),
          },
          { additionalProperties: false },
        ),
        {
          description:
            'REVIEW (issue 37): orders whose provider contradicts itself — its query agrees with the order, its statement does not (paid in the query, refunded in the statement). Neither answer is believed over the other: each order gets a note in the needs-a-person list (GET /v1/admin/attention), and the mismatch stays listed',
        },
      ),
    ),
    state_drift: Type.Optional(
      Type.Array(Type.String(), {
        description: 'a rebuilding full pass: the running totals the incremental state had wrong',
      }),
    ),
  },
  { additionalProperties: false },
);

// Fails to compile when the report and its schema drift apart (see SameShape).
const sameShape: SameShape<Static<typeof ReconciliationReport>, Report> = true;
void sameShape;

export const reconciliationExample = {
  ok: true,
  pending: 0,
  pending_orders: [],
  mismatches: [],
  statuses: { PAID: 7, CANCELLED: 2 },
  totals: { channel_net: 13930, wallet_net: 0, paid_sum: 13930, confirmed: 7, paid: 7, drift: 0 },
  events: {
    paid_without_event: 0,
    terminal_without_event: 0,
    duplicate_shipments: 0,
    lines_disagree: 0,
    shipped_without_paid: 0,
    pending: 0,
    dead: 0,
  },
};

export const reconciliationQuery = Type.Object(
  {
    pass: Type.Optional(
      stringEnum(['full', 'incremental'], {
        description:
          'full (default): read everything; incremental (operator only): from the stored cursor of what changed, then store the new one',
      }),
    ),
  },
  { additionalProperties: false },
);

export const reconciliationSchema = {
  operationId: 'getReconciliation',
  summary: 'Three-way reconciliation: provider statement × orders × stock (+ events)',
  description:
    '`ok` when there is no mismatch and nothing pending; orders still converging are counted as pending, not judged. docs/reconciliation.md describes every class.',
  tags: ['admin'],
  querystring: reconciliationQuery,
  response: {
    200: jsonAnswer('The report', ReconciliationReport, { example: reconciliationExample }),
    ...problemAnswers([...ADMIN_AUTH, 'VALIDATION']),
  },
};
