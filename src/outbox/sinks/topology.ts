// Names shared by the broker sinks and the fulfillment consumers; both sides must agree on them.
export interface BrokerTopology {
  /** JetStream stream that stores order events. */
  stream: string;
  /** Subjects are `<subjectPrefix>.<event_type>`; the stream captures `<subjectPrefix>.>`. */
  subjectPrefix: string;
  /** JetStream durable consumer name of the fulfillment service. */
  durable: string;
  /** RabbitMQ topic exchange; routing key = event_type. */
  exchange: string;
  /** RabbitMQ durable queue of the fulfillment service, bound to the exchange with `#`. */
  queue: string;
}

export const DEFAULT_TOPOLOGY: BrokerTopology = {
  stream: 'FLASHPAY_ORDERS',
  subjectPrefix: 'flashpay.orders',
  durable: 'flashpay-fulfillment',
  exchange: 'flashpay.orders',
  queue: 'flashpay.fulfillment',
};

export function subjectFor(subjectPrefix: string, eventType: string): string {
  return `${subjectPrefix}.${eventType}`;
}
