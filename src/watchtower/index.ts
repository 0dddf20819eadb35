/**
 * The watchtower as the node (or a standalone `strand watchtower`) runs it: the store in the
 * node's database, the RPC-fed channels, and — unless `fiber.disable_built_in_watchtower` — the
 * node's own channels read from the same database.
 */
import { ccc } from '@ckb-ccc/core';
import { type ChainClient, UdtWhitelist, type Wallet } from '../chain/index.ts';
import type { MachineEnv } from '../channel/index.ts';
import { ChannelStore, loadChannelScripts } from '../channel/index.ts';
import type { Db } from '../store/index.ts';
import { WatchtowerStore } from './store.ts';
import { ownChannelTargets, type PreimageFor, rpcChannelTargets } from './targets.ts';
import { createWatchtower, type WatchLogger, type Watchtower } from './watcher.ts';

export { WatchtowerStore, watchtowerSchema } from './store.ts';
export type { Watchtower } from './watcher.ts';

export interface NodeWatchtowerOptions {
  /** The node's database (with `channelSchema` and `watchtowerSchema` applied). */
  db: Db;
  chain: ChainClient;
  wallet: Wallet;
  /** `fiber.watchtower_check_interval_seconds` in ms (default 60 s); null: never checked periodically. */
  intervalMs: number | null;
  /** Watch the node's own channels too (false with `fiber.disable_built_in_watchtower`). */
  ownChannels?: boolean;
  /** `ckb.udt_whitelist`: where the cell deps of a UDT channel's type script come from. */
  udtWhitelist?: UdtWhitelist;
  onPreimage?(paymentHash: string, preimage: string): void;
  /** What the node knows of its received TLCs' preimages: claimed on chain by the watchtower. */
  preimageFor?: PreimageFor;
  logger?: WatchLogger;
}

/** The cell deps of a whitelisted UDT (by code hash and hash type; args may differ). */
function udtDepsFrom(list: UdtWhitelist) {
  return (s: ccc.Script): ccc.CellDep[] =>
    UdtWhitelist.cellDeps(list.byCode(s)[0]).map((d) => ccc.CellDep.from(d));
}

/** Builds and starts the watcher; the chain must name the channel scripts (`get_dev_scripts`). */
export async function startNodeWatchtower(o: NodeWatchtowerOptions): Promise<Watchtower> {
  const scripts = await loadChannelScripts(o.chain);
  const env: MachineEnv = { chainHash: '', ...scripts, now: Date.now };
  const store = new WatchtowerStore(o.db);
  const channels = new ChannelStore(o.db);
  const udtDeps = udtDepsFrom(o.udtWhitelist ?? new UdtWhitelist([]));
  const tower = createWatchtower({
    store,
    chain: o.chain,
    wallet: o.wallet,
    scripts,
    intervalMs: o.intervalMs ?? 0,
    targets: () => [
      ...(o.ownChannels === false ? [] : ownChannelTargets(channels.list(), env, o.preimageFor)),
      ...rpcChannelTargets(store.listChannels(), udtDeps),
    ],
    onPreimage: o.onPreimage,
    logger: o.logger,
  });
  if (o.intervalMs !== null) tower.start();
  return tower;
}

export { checkCellOutput, checkPubkey, checkSecretKey, checkSignature, moleculeBytes } from './check.ts';
export { WATCHTOWER_ERROR_CODES, WatchtowerError, type WatchtowerErrorCode } from './errors.ts';
export type { WatchtowerFeed } from './feed.ts';
export { startWatchtowerFeed } from './feed.ts';
export type { RevocationData, SettlementData, SettlementTlcData } from './types.ts';
export { fulfilReceivedTlcs } from './upstream.ts';
