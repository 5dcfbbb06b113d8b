import type { Clock } from '../../platform/clock.ts';
import { createPool, type Db } from '../../platform/db.ts';
import type { Config } from '../../platform/config.ts';
import { amqpStockTransport } from './transports/amqp.ts';
import { jetStreamStockTransport } from './transports/jetstream.ts';
import { createStockPump, type PumpRoles, type StockPump } from './pipeline.ts';

// The stock pump as the configuration wires it (FLASHPAY_STOCK_SERVICE, FLASHPAY_STOCK_TRANSPORT):
// which steps this process runs, over which transport, against which databases; one pump per
// process and deps. orders/queued/pipeline.ts is the pump itself.

type PumpDeps = { db: Db; clock: Clock; config: Config };
// One pump per process and deps: the loop and the operator's drain share its broker connection.
const PUMPS = new WeakMap<object, StockPump>();

/** The pump of `flashpay start` (and of the operator's drain): the stock service inside unless FLASHPAY_STOCK_SERVICE=external. */
export function stockPumpFor(
  deps: PumpDeps,
  onError?: (error: unknown) => void,
  roles: PumpRoles = shopRoles(deps.config),
): StockPump {
  const known = PUMPS.get(deps);
  if (known) return known;
  const { config } = deps;
  // Split databases over the database transport: the shop delivers into, and reads results from,
  // the stock service's own database; over a broker it never needs it.
  const reachStock = config.stockService === 'separate' && config.stockTransport === 'database' && roles.shop;
  if (reachStock && !config.stockDatabaseUrl)
    throw new Error('FLASHPAY_STOCK_SERVICE=separate with the database transport needs FLASHPAY_STOCK_DATABASE_URL');
  const stockDb = reachStock ? createPool(config.stockDatabaseUrl ?? '', STOCK_POOL_SIZE) : deps.db;
  if (config.stockTransport === 'amqp' && !config.amqpUrl)
    throw new Error('FLASHPAY_STOCK_TRANSPORT=amqp needs AMQP_URL');
  if (config.stockTransport === 'jetstream' && !config.natsUrl)
    throw new Error('FLASHPAY_STOCK_TRANSPORT=jetstream needs NATS_URL');
  const sides = {
    prefix: config.stockQueuePrefix,
    shopDb: deps.db,
    stockDb,
    consume: { requests: roles.stock, results: roles.shop },
    ...(onError ? { onError } : {}),
  };
  const transport =
    config.stockTransport === 'amqp'
      ? amqpStockTransport({ url: config.amqpUrl ?? '', ...sides })
      : config.stockTransport === 'jetstream'
        ? jetStreamStockTransport({
            servers: config.natsUrl ?? '',
            replicas: config.natsReplicas,
            ackWaitMs: config.stockAckWaitMs,
            ...sides,
          })
        : undefined;
  const made = createStockPump({
    shopDb: deps.db,
    stockDb,
    clock: deps.clock,
    leaseMs: config.claimLeaseMs,
    resendAfterMs: config.stockResendAfterMs,
    roles,
    ...(transport ? { transport } : {}),
    ...(onError ? { onError } : {}),
  });
  const pump: StockPump =
    stockDb === deps.db
      ? made
      : {
          ...made,
          async close() {
            await made.close();
            await stockDb.end();
          },
        };
  PUMPS.set(deps, pump);
  return pump;
}

// The shop's connections to a separate stock database: one relay pass at a time uses one or two.
const STOCK_POOL_SIZE = 3;

/** The steps `flashpay start` runs, from FLASHPAY_STOCK_SERVICE. */
function shopRoles(config: PumpDeps['config']): PumpRoles {
  const apart = config.stockService === 'separate';
  return {
    shop: true,
    stock: config.stockService === 'inside',
    results: config.stockService === 'inside' || (apart && config.stockTransport === 'database'),
    apart,
  };
}

/** The steps `flashpay stock` (alias `flashpay inventory`) runs: apply batches, and relay results unless the shops read them from its database. */
export function stockServiceRoles(config: PumpDeps['config']): PumpRoles {
  const apart = config.stockService === 'separate';
  return { shop: false, stock: true, results: !(apart && config.stockTransport === 'database'), apart };
}
