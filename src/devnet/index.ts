/**
 * The `devnet/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export type { DevnetDescription } from './devnet.ts';
export { formatDevnet, startDevnet } from './devnet.ts';
export { loadTopology } from './topology.ts';
export type { TrafficPattern } from './traffic.ts';
export { runTraffic } from './traffic.ts';
export { formatLive, formatSummary } from './traffic-stats.ts';
