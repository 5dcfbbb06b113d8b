import { Counter, Gauge } from 'prom-client';
import { businessRegistry } from '../platform/business-metrics.ts';

// Seed 002's operator view: compensations started, completed, and pending right now.
export const sagaMetrics = {
  started: new Counter({
    name: 'flashpay_compensations_started_total',
    help: 'Orders whose fulfilment was refused and whose compensation started',
    registers: [businessRegistry],
  }),
  completed: new Counter({
    name: 'flashpay_compensations_completed_total',
    help: 'Compensations completed (refunded, then units released)',
    registers: [businessRegistry],
  }),
  pending: new Gauge({
    name: 'flashpay_compensations_pending',
    help: 'Sagas compensating after the last saga pass (COMPENSATING or COMPENSATION_PENDING orders)',
    registers: [businessRegistry],
  }),
};
