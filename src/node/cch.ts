/**
 * Builds the cross-chain hub of a node that runs the `cch` service. As fnn v0.8: inside a node
 * that also runs `fiber`, the hub uses that node directly; otherwise it follows the node at
 * `cch.fiber_rpc_url` over RPC and `subscribe_store_changes` (the standalone `strand cch`).
 */
import {
  CchOrderStore,
  CchService,
  connectLnd,
  type FiberAgent,
  inProcessFiberAgent,
  type LightningBackend,
  resolveCchConfig,
  rpcFiberAgent,
} from '../cch/index.ts';
import { PaymentStore } from '../payment/index.ts';
import type { MethodSpec } from '../rpc/index.ts';
import type { Db, StoreChangeBus } from '../store/index.ts';
import { type Config, currencyOf } from './config.ts';
import type { Logger } from './log.ts';

export interface CchParts {
  config: Config;
  db: Db;
  log: Logger;
  /** The node's own methods, when it runs the `fiber` service (in-process hub). */
  localMethods?: MethodSpec[];
  changes: StoreChangeBus;
  /** Resolves once every commit so far is on disk: LND is told nothing before (persist-before-speak). */
  durable: () => Promise<void>;
}

export function startCch(parts: CchParts): CchService {
  const cfg = resolveCchConfig(parts.config.cch, parts.config.baseDir);
  const log = parts.log.child({ service: 'cch' });
  let fiber: FiberAgent;
  if (parts.localMethods) {
    const payments = new PaymentStore(parts.db);
    fiber = inProcessFiberAgent(
      parts.localMethods,
      parts.changes,
      (hash) => payments.preimage(hash) ?? undefined,
    );
  } else if (cfg.fiberRpcUrl)
    fiber = rpcFiberAgent(cfg.fiberRpcUrl, {
      token: cfg.fiberRpcToken,
      onLog: (msg, err) => log.warn({ err }, msg),
    });
  else
    throw new Error(
      'the cch service needs the fiber service in the same node, or cch.fiber_rpc_url naming the node to follow',
    );
  const service = new CchService({
    config: cfg,
    store: new CchOrderStore(parts.db),
    lightning: afterDurable(
      connectLnd({
        url: cfg.lndRpcUrl,
        certPath: cfg.lndCertPath,
        macaroonPath: cfg.lndMacaroonPath,
      }),
      parts.durable,
    ),
    fiber,
    currency: currencyOf(parts.config.fiber.chain),
    log,
  });
  service.start();
  log.info({ lnd: cfg.lndRpcUrl, fiber: cfg.fiberRpcUrl ?? 'in-process' }, 'cross-chain hub started');
  return service;
}

/** LND's calls that act on an order's stored state wait until that state is durable. */
function afterDurable(lnd: LightningBackend, durable: () => Promise<void>): LightningBackend {
  return {
    trackInvoice: lnd.trackInvoice.bind(lnd),
    trackPayment: lnd.trackPayment.bind(lnd),
    close: lnd.close.bind(lnd),
    addHoldInvoice: (req) => durable().then(() => lnd.addHoldInvoice(req)),
    settleInvoice: (preimage) => durable().then(() => lnd.settleInvoice(preimage)),
    cancelInvoice: (hash) => durable().then(() => lnd.cancelInvoice(hash)),
    sendPayment(req, onUpdate, onError) {
      let stop: (() => void) | undefined;
      let stopped = false;
      void durable().then(() => {
        if (!stopped) stop = lnd.sendPayment(req, onUpdate, onError);
      });
      return () => {
        stopped = true;
        stop?.();
      };
    },
  };
}
