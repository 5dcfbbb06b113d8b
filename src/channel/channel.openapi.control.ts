import { Type } from 'typebox';
import { nullable, stringEnum } from '../platform/openapi.ts';
import { FAULT_KINDS, FAULT_OPS } from './faults.ts';
import { accountBody } from './channel.fixtures.schemas.ts';
import { callbacksBody, faultBody, releaseBody, sendBody, settingsBody } from './channel.schemas.ts';
import { control, MO } from './channel.openapi.blocks.ts';

// The control API of the provider double (only with `--control`): faults, notifications,
// balances and settings, as its OpenAPI document declares them.

const FaultRule = Type.Object(
  {
    id: Type.Integer(),
    op: stringEnum(FAULT_OPS),
    kind: stringEnum(FAULT_KINDS),
    merchant_order: nullable(Type.String()),
    ms: Type.Integer(),
    remaining: Type.Integer(),
  },
  { additionalProperties: false },
);
const faultExample = { id: 1, op: 'charge', kind: 'DELAY_RESPONSE', merchant_order: MO, ms: 2000, remaining: 1 };
const Callbacks = Type.Object(
  {
    mode: stringEnum(['AUTO', 'HOLD']),
    duplicates: Type.Integer(),
    delay_ms: Type.Array(Type.Integer(), { minItems: 2, maxItems: 2 }),
    seed: Type.Integer(),
  },
  { additionalProperties: false },
);
const callbacksExample = { mode: 'HOLD', duplicates: 2, delay_ms: [0, 0], seed: 1 };
const Held = Type.Object(
  {
    id: Type.String(),
    notify_id: Type.String(),
    merchant_order: Type.String(),
    kind: stringEnum(['CHARGED', 'DECLINED', 'REFUNDED']),
    amount: Type.Integer(),
    txn: nullable(Type.String()),
  },
  { additionalProperties: false },
);
const heldExample = {
  id: 'held_1',
  notify_id: 'ntf_41',
  merchant_order: MO,
  kind: 'CHARGED',
  amount: 1990,
  txn: 'txn_5f0c',
};
const NotificationView = Type.Object(
  {
    notify_id: Type.String(),
    merchant_order: Type.String(),
    kind: stringEnum(['CHARGED', 'DECLINED', 'REFUNDED']),
    amount: Type.Integer(),
    txn: nullable(Type.String()),
    notify_url: Type.String(),
    status: Type.String({ description: 'delivery status over all copies' }),
    attempts: Type.Integer(),
    copies: Type.Array(
      Type.Object(
        { status: Type.String(), attempts: Type.Integer(), last_error: nullable(Type.String()) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
const notificationExample = {
  notify_id: 'ntf_41',
  merchant_order: MO,
  kind: 'CHARGED',
  amount: 1990,
  txn: 'txn_5f0c',
  notify_url: 'http://127.0.0.1:8080/v1/payment-notifications',
  status: 'DELIVERED',
  attempts: 1,
  copies: [{ status: 'DELIVERED', attempts: 1, last_error: null }],
};
const Counts = Type.Object(
  { total: Type.Integer(), by_order: Type.Record(Type.String(), Type.Integer()) },
  { additionalProperties: false },
);
const Settings = Type.Object(
  { notify_retry_base_ms: Type.Integer(), notify_max_attempts: Type.Integer() },
  { additionalProperties: false },
);
const Account = Type.Object(
  { customer: Type.String({ description: '`<tenant>/<user>`' }), balance: Type.Integer() },
  { additionalProperties: false },
);

export const controlSchemas = {
  setAccount: control(
    'setAccount',
    "Set a customer's balance (charges beyond it are declined INSUFFICIENT_FUNDS)",
    Account,
    { customer: 'acme/alice', balance: 5000 },
    accountBody,
    { customer: 'acme/alice', balance: 5000 },
  ),
  getAccount: control(
    'getAccount',
    "A customer's balance",
    Account,
    { customer: 'acme/alice', balance: 3010 },
    undefined,
    undefined,
    ['NOT_FOUND'],
  ),
  reset: control(
    'reset',
    'Empty the ledger, the fault rules and the held callbacks',
    Type.Object({ ok: Type.Boolean() }, { additionalProperties: false }),
    { ok: true },
  ),
  armFault: control('armFault', 'Arm a fault rule', FaultRule, faultExample, faultBody, {
    op: 'charge',
    kind: 'DELAY_RESPONSE',
    merchant_order: MO,
    ms: 2000,
  }),
  listFaults: control('listFaults', 'The armed fault rules', Type.Array(FaultRule), [faultExample]),
  setCallbacks: control('setCallbacks', 'How notifications are delivered', Callbacks, callbacksExample, callbacksBody, {
    mode: 'HOLD',
    duplicates: 2,
  }),
  getCallbacks: control('getCallbacks', 'The notification delivery settings', Callbacks, callbacksExample),
  listHeld: control('listHeldCallbacks', 'Notifications held back (mode HOLD)', Type.Array(Held), [heldExample]),
  release: control(
    'releaseCallbacks',
    'Deliver held notifications in exactly this order',
    Type.Object({ released: Type.Array(Type.String()) }, { additionalProperties: false }),
    { released: ['held_2', 'held_1'] },
    releaseBody,
    { ids: ['held_2', 'held_1'] },
  ),
  send: control(
    'sendNotification',
    'Send a notification now (a late or forged one)',
    NotificationView,
    notificationExample,
    sendBody,
    { merchant_order: MO, kind: 'CHARGED', amount: 1990 },
  ),
  requests: control(
    'countRequests',
    'Requests received per operation and merchant order',
    Type.Object(
      {
        ...Object.fromEntries(FAULT_OPS.map((op) => [op, Counts])),
        // A provider double's (issue 37): each request as it arrived, newest last.
        received: Type.Optional(
          Type.Array(
            Type.Object({
              method: Type.String(),
              path: Type.String(),
              headers: Type.Record(Type.String(), Type.String()),
              at: Type.String({ format: 'date-time' }),
            }),
          ),
        ),
      },
      { additionalProperties: false },
    ),
    {
      charge: { total: 1, by_order: { [MO]: 1 } },
      query: { total: 0, by_order: {} },
      close: { total: 0, by_order: {} },
      refund: { total: 0, by_order: {} },
      fulfil: { total: 0, by_order: {} },
    },
  ),
  notifications: control('listNotifications', 'Every notification and its deliveries', Type.Array(NotificationView), [
    notificationExample,
  ]),
  getSettings: control('getSettings', 'Notification retry settings', Settings, {
    notify_retry_base_ms: 1000,
    notify_max_attempts: 8,
  }),
  setSettings: control(
    'setSettings',
    'Change the notification retry settings',
    Settings,
    { notify_retry_base_ms: 20, notify_max_attempts: 5 },
    settingsBody,
    { notify_retry_base_ms: 20 },
  ),
};
