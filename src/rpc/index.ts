/**
 * The `rpc/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export { createAuthorizer, generateKeyPair, mintToken, OPEN_ACCESS } from './auth.ts';
export { parseHostPort } from './bind.ts';
export type { RpcClient } from './client.ts';
export { createRpcClient, RpcCallError } from './client.ts';
export { applyCompat } from './compat.ts';
export { MAX_FEE_PROPORTIONAL_MILLIONTHS } from './limits.ts';
export type { MethodSpec } from './method.ts';
export { DEFAULT_MODULES, MODULE_NAMES } from './method.ts';
export { adminMethods } from './modules/admin.ts';
export { cchMethods } from './modules/cch.ts';
export { channelMethods } from './modules/channel.ts';
export { channelExternalFundingMethods } from './modules/channel-external.ts';
export { devMethods } from './modules/dev.ts';
export { externalFundingMethods } from './modules/dev-funding.ts';
export { graphMethods } from './modules/graph.ts';
export { infoMethods } from './modules/info.ts';
export { invoiceMethods } from './modules/invoice.ts';
export type { RouteBuilder } from './modules/payment.ts';
export { paymentMethods } from './modules/payment.ts';
export { peerMethods } from './modules/peer.ts';
export { profMethods } from './modules/prof.ts';
export { pubsubMethods } from './modules/pubsub.ts';
export { watchtowerMethods } from './modules/watchtower.ts';
export { discoverMethod } from './openrpc.ts';
export { PERMISSIONS } from './permissions.ts';
export type { ScriptJson } from './schema.ts';
export type { RpcServer } from './server.ts';
export { assertBindAllowed, startRpcServer } from './server.ts';
