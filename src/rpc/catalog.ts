/**
 * Every method of every module, built without a node (the services are never called: the specs
 * are read, not run), in the order the node registers them. `npm run docs:rpc` documents these;
 * a process test checks that a node with every module enabled serves the same document.
 */
import { applyCompat } from './compat.ts';
import type { MethodSpec } from './method.ts';
import { adminMethods } from './modules/admin.ts';
import { cchMethods } from './modules/cch.ts';
import { channelMethods } from './modules/channel.ts';
import { channelExternalFundingMethods } from './modules/channel-external.ts';
import { devMethods } from './modules/dev.ts';
import { externalFundingMethods } from './modules/dev-funding.ts';
import { graphMethods } from './modules/graph.ts';
import { infoMethods } from './modules/info.ts';
import { invoiceMethods } from './modules/invoice.ts';
import { paymentMethods } from './modules/payment.ts';
import { peerMethods } from './modules/peer.ts';
import { profMethods } from './modules/prof.ts';
import { pubsubMethods } from './modules/pubsub.ts';
import { watchtowerMethods } from './modules/watchtower.ts';
import { discoverMethod, type RpcCompat } from './openrpc.ts';

/** Stands for a service a spec will never call here. */
const unused = {} as never;

export function catalogMethods(version: string, compat: RpcCompat = 'seed'): MethodSpec[] {
  const specs: MethodSpec[] = applyCompat(
    [
      ...infoMethods(unused),
      ...invoiceMethods(unused, { attrStyle: compat === 'fnn-0.8' ? 'v08' : 'seed' }),
      ...paymentMethods(unused),
      ...peerMethods(unused),
      ...graphMethods(unused),
      ...channelMethods(unused, unused),
      ...channelExternalFundingMethods(unused),
      ...devMethods(unused),
      ...externalFundingMethods(unused),
      ...pubsubMethods(unused),
      ...cchMethods(unused),
      ...watchtowerMethods(unused),
      ...adminMethods(unused),
      ...profMethods(''),
    ],
    compat,
  );
  specs.push(discoverMethod(() => specs, { version, compat }));
  return specs;
}
