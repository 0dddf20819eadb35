/**
 * The `node/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export { ConfigError, loadConfig } from './config.ts';
export { CONFIG_FIELDS, flagNames } from './config-fields.ts';
export { applyHeapGrowth } from './heap.ts';
export { dropPendingLogs, flushLogsForExit } from './log.ts';
export { StrandNode } from './node.ts';
export { NODE_SCHEMAS } from './store-schemas.ts';
