import { connect, type NatsConnection } from '@nats-io/transport-node';

// Every NATS connection flashpay makes (outbox sink, fulfilment consumer, stock transport) opens
// here, so all of them read NATS_URL the same way and ride out the loss of a server alike.

// Between two rounds over the server list: quick enough that a leader change (a few seconds on a
// three-node cluster) costs little more than the election, slow enough not to spin on a dead host.
const RECONNECT_WAIT_MS = 500;
const CONNECT_TIMEOUT_MS = 5_000;

/** `NATS_URL` as a server list: `nats://h1:4222, nats://h2:4222` → two trimmed entries. */
export function natsServers(url: string): string[] {
  const servers = url
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (servers.length === 0) throw new Error(`NATS_URL names no server: "${url}"`);
  return servers;
}

/**
 * Connects to any server of the list and never gives up reconnecting (the client's default stops
 * after 10 tries): a cluster that loses a node, or a broker back after a long outage, must find
 * its clients again. The client also learns the cluster's other servers from the one it reaches.
 */
export function connectNats(url: string, name: string): Promise<NatsConnection> {
  return connect({
    servers: natsServers(url),
    name,
    timeout: CONNECT_TIMEOUT_MS,
    maxReconnectAttempts: -1,
    reconnectTimeWait: RECONNECT_WAIT_MS,
  });
}
