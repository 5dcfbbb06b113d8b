// The environment variables several commands read, described once (README "Configuration" has all).
export const ENV = {
  DATABASE_URL: {
    name: 'DATABASE_URL',
    description: 'the service database (default: the running stack’s, else an embedded PostgreSQL)',
  },
  FLASHPAY_DATA_DIR: {
    name: 'FLASHPAY_DATA_DIR',
    description: 'secrets, runtime.json and the embedded database (default .flashpay)',
  },
  FLASHPAY_PG_PORT: {
    name: 'FLASHPAY_PG_PORT',
    description: 'the embedded PostgreSQL’s port (default a free one)',
  },
  FLASHPAY_CHANNEL_URL: {
    name: 'FLASHPAY_CHANNEL_URL',
    description: 'the payment channel (default: the running stack’s)',
  },
  FLASHPAY_JWT_SECRET: {
    name: 'FLASHPAY_JWT_SECRET',
    description: 'signs tokens (development default: FLASHPAY_DATA_DIR/jwt.secret)',
  },
  FLASHPAY_EVENTS_SECRET: {
    name: 'FLASHPAY_EVENTS_SECRET',
    description: 'signs delivered events (development default: FLASHPAY_DATA_DIR/events.secret)',
  },
  FLASHPAY_NOTIFY_SECRET: {
    name: 'FLASHPAY_NOTIFY_SECRET',
    description: 'signs the channel’s notifications (development default: FLASHPAY_DATA_DIR/notify.secret)',
  },
  FLASHPAY_CONTROL_TOKEN: {
    name: 'FLASHPAY_CONTROL_TOKEN',
    description: 'bearer token of the channel’s /_control API (required with --control in production)',
  },
  FLASHPAY_STOCK_DATABASE_URL: {
    name: 'FLASHPAY_STOCK_DATABASE_URL',
    description: 'the stock service’s own database (FLASHPAY_STOCK_SERVICE=separate)',
  },
  FLASHPAY_PROVIDER: {
    name: 'FLASHPAY_PROVIDER',
    description: 'fake (default), stripe or alipay; FLASHPAY_PROVIDER_TENANTS per tenant',
  },
} as const;
