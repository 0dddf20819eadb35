/**
 * The `cch/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export { BTC_NETWORKS } from './bolt11.ts';
export { cchSection, resolveCchConfig } from './config.ts';
export { CCH_ERROR_CODES, CchError, type CchErrorCode } from './errors.ts';
export type { FiberAgent } from './fiber-agent.ts';
export { inProcessFiberAgent, rpcFiberAgent } from './fiber-agent.ts';
export type { LightningBackend } from './lnd.ts';
export { connectLnd } from './lnd.ts';
export { ORDER_STATUSES, orderToJson } from './order.ts';
export { CchService } from './service.ts';
export { CchOrderStore, cchSchema } from './store.ts';
