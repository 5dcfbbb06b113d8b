// flashpay cluster: real engines (pg_auto_failover, nats-server, HAProxy) and flashpay processes on
// loopback, to try and to test failover on one machine (docs/deploy.md).
export { clusterUp } from './cluster.ts';
export { APT_LINE, checkEngines } from './engines.ts';
export { ClusterError, readState, type ClusterState, type NodeView } from './cluster.state.ts';
export {
  clusterDown,
  clusterHeal,
  clusterKill,
  clusterPartition,
  clusterStart,
  clusterStatus,
} from './cluster.manage.ts';
export { isRoot } from './netns.ts';
export { isAlive, waitUntil, type NodeKind, type NodeRecord } from './node.ts';
export { pgDirOf, setReplicationQuorum } from './postgres.ts';
