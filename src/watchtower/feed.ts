/**
 * Feeding a standalone watchtower (`fiber.standalone_watchtower_rpc_url`): the node's channels,
 * read from its store, become the watchtower RPC calls of `fiber-rpc.md` §1.8 —
 * `create_watch_channel` once, `update_revocation` whenever the peer revoked a newer commitment,
 * `update_local_settlement` when our commitment changed, `remove_watch_channel` after a
 * cooperative close. Pushed on an interval and idempotent, so a restart simply pushes again.
 */
import { ccc } from '@ckb-ccc/core';
import type { ChainClient } from '../chain/index.ts';
import type { MachineEnv } from '../channel/index.ts';
import {
  buildCommitment,
  type Channel,
  type ChannelKeys,
  ChannelStore,
  deriveChannelKeys,
  hasFlag,
  latestCommitmentView,
  loadChannelScripts,
  type PartyParams,
  type ScriptData,
  tlcPubkeys,
  tlcSecret,
  toScript,
} from '../channel/index.ts';
import type { Db } from '../store/index.ts';
import type { WatchLogger } from './watcher.ts';

const q = (v: bigint) => `0x${v.toString(16)}`;
const noPrefix = (h: string) => (h.startsWith('0x') ? h.slice(2) : h);

function scriptJson(s: ScriptData) {
  return { code_hash: s.codeHash, hash_type: s.hashType, args: s.args };
}

/** Settlement data as the watchtower takes it: amounts (with reserves) and pending TLCs, local = ours. */
function settlementOf(ch: Channel, k: ChannelKeys) {
  const r = ch.remote as PartyParams;
  const reserve = (p: PartyParams) => (ch.udt ? 0n : p.reserve);
  const pending = ch.tlcs.filter((t) => !t.removal);
  return {
    local_amount: q(ch.localBalance + reserve(ch.local)),
    remote_amount: q(ch.remoteBalance + reserve(r)),
    tlcs: pending.map((t) => ({
      tlc_id: t.offered ? { Offered: q(t.id) } : { Received: q(t.id) },
      hash_algorithm: t.hashAlgorithm === 1 ? 'sha256' : 'ckb_hash',
      payment_amount: q(t.amount),
      payment_hash: t.paymentHash,
      expiry: q(t.expiry),
      // Each TLC's own keys (`tlc-keys.ts`): our secret, the peer's public key.
      local_key: noPrefix(ccc.hexFrom(tlcSecret(k, t))),
      remote_key: noPrefix(ccc.hexFrom(tlcPubkeys(ch, t).remote)),
    })),
  };
}

/** The params of the watchtower calls that describe one channel. */
export function watchParamsOf(ch: Channel, env: MachineEnv) {
  const r = ch.remote as PartyParams;
  const k = deriveChannelKeys(ccc.bytesFrom(ch.seed));
  const create = {
    channel_id: ch.id,
    funding_udt_type_script: ch.udt ? scriptJson(ch.udt) : null,
    local_settlement_key: noPrefix(ccc.hexFrom(k.tlcBaseKey)),
    remote_settlement_key: noPrefix(r.tlcBasepoint),
    local_funding_pubkey: noPrefix(ch.local.fundingPubkey),
    remote_funding_pubkey: noPrefix(r.fundingPubkey),
    settlement_data: settlementOf(latestCommitmentView(ch, false), k),
  };
  const rev = ch.revocation;
  let revocation = null;
  if (rev) {
    // The peer signed its whole commitment cell (capacity, type and data are the same in every
    // version) over to our shutdown script.
    const theirs = buildCommitment(latestCommitmentView(ch, true), true, env).tx;
    const cell = theirs.outputs[0] as ccc.CellOutput;
    const data = ccc.bytesFrom(theirs.outputsData[0] ?? '0x');
    const output = ccc.CellOutput.from({
      capacity: cell.capacity,
      lock: toScript(ch.local.shutdownScript),
      type: cell.type,
    });
    const len = new Uint8Array(4);
    new DataView(len.buffer).setUint32(0, data.length, true);
    revocation = {
      channel_id: ch.id,
      revocation_data: {
        commitment_number: q(rev.version),
        aggregated_signature: rev.signature,
        output: ccc.hexFrom(output.toBytes()),
        output_data: ccc.hexFrom(ccc.bytesConcat(len, data)),
      },
      settlement_data: settlementOf(latestCommitmentView(ch, true), k),
    };
  }
  return { create, revocation };
}

/** Any JSON-RPC client of the watchtower (the node passes `rpc/client.ts`'s). */
export interface WatchtowerRpc {
  call(method: string, params?: unknown): Promise<unknown>;
}

export interface WatchtowerFeedOptions {
  db: Db;
  chain: ChainClient;
  /** A client of the standalone watchtower (with its token, if it checks them). */
  client: WatchtowerRpc;
  intervalMs: number;
  logger?: WatchLogger;
}

export interface WatchtowerFeed {
  /** One push of everything that changed (also what the timer runs). */
  pushNow(): Promise<void>;
  stop(): Promise<void>;
}

export async function startWatchtowerFeed(o: WatchtowerFeedOptions): Promise<WatchtowerFeed> {
  const scripts = await loadChannelScripts(o.chain);
  const env: MachineEnv = { chainHash: '', ...scripts, now: Date.now };
  const channels = new ChannelStore(o.db);
  /** What the watchtower last accepted, per channel: a fingerprint of the pushed params. */
  const pushed = new Map<string, string>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  async function pushChannel(ch: Channel): Promise<void> {
    const closed = ch.state === 'CLOSED' && hasFlag(ch, 'COOPERATIVE');
    if (closed) {
      if (pushed.get(ch.id) === 'removed') return;
      await o.client.call('remove_watch_channel', { channel_id: ch.id });
      pushed.set(ch.id, 'removed');
      return;
    }
    const p = watchParamsOf(ch, env);
    const print = JSON.stringify(p);
    const last = pushed.get(ch.id);
    if (last === print) return;
    if (last === undefined) {
      await o.client.call('create_watch_channel', p.create);
    } else {
      await o.client.call('update_local_settlement', {
        channel_id: ch.id,
        settlement_data: p.create.settlement_data,
      });
    }
    if (p.revocation) await o.client.call('update_revocation', p.revocation);
    pushed.set(ch.id, print);
  }

  async function pushAll(): Promise<void> {
    for (const ch of channels.list()) {
      if (stopped) return;
      if (!ch.remote || !ch.fundingTxHash) continue;
      try {
        await pushChannel(ch);
      } catch (e) {
        o.logger?.warn(
          { channel_id: ch.id, err: (e as Error).message },
          'standalone watchtower update failed',
        );
      }
    }
  }

  let queue: Promise<void> = Promise.resolve();
  const pushNow = () => {
    queue = queue.then(pushAll, pushAll);
    return queue;
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => void pushNow().finally(schedule), o.intervalMs);
    timer.unref?.();
  };
  schedule();
  return {
    pushNow,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await queue;
    },
  };
}
