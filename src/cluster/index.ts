// flashpay cluster: real engines (pg_auto_failover, nats-server, HAProxy) and flashpay processes on
// loopback, to try and to test failover on one machine (docs/deploy.md).
export {
  APT_LINE,
  checkEngines,
  ClusterError,
  clusterDown,
  clusterKill,
  clusterStart,
  clusterStatus,
  clusterUp,
  readState,
  type ClusterState,
  type NodeView,
} from './cluster.ts';
export { isAlive, waitUntil, type NodeKind, type NodeRecord } from './node.ts';
export { pgDirOf, setReplicationQuorum } from './postgres.ts';
