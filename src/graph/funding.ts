/**
 * The on-chain check of a channel announcement (`docs/reference/fiber-routing-protocol.md`
 * §3.5, `gossip.rs` get_channel_on_chain_info / verify_channel_announcement): the funding tx is
 * committed, its output 0 is locked with args = ckbhash(ckb_key)[0..20], a CKB channel's capacity
 * is at most that output's capacity; the block timestamp becomes the announcement's cursor time.
 */
import type { ChainClient } from '../chain/index.ts';
import { bytesToHex } from '../codec/index.ts';
import { ckbHash } from '../crypto/index.ts';
import type { ChannelAnnouncement } from './messages.ts';

/** Resolves to the funding block's timestamp (ms), or rejects with the reason. */
export interface FundingChecker {
  check(a: ChannelAnnouncement): Promise<bigint>;
}

export class FundingCheckError extends Error {}

interface TxJson {
  outputs?: { capacity?: string; lock?: { args?: string } }[];
}

export function createChainFundingChecker(
  chain: Pick<ChainClient, 'getTransaction' | 'call'>,
): FundingChecker {
  return {
    async check(a) {
      const txHash = bytesToHex(a.channelOutpoint.txHash);
      const got = await chain.getTransaction(txHash);
      if (got?.tx_status.status !== 'committed' || !got.tx_status.block_hash) {
        throw new FundingCheckError(`Channel announcement transaction ${txHash} not found or not confirmed`);
      }
      const output = (got.transaction as TxJson | null)?.outputs?.[0];
      if (!output?.lock || typeof output.lock.args !== 'string' || typeof output.capacity !== 'string') {
        throw new FundingCheckError(`On-chain transaction found but no output: ${txHash}`);
      }
      const expected = bytesToHex(ckbHash(a.ckbKey).slice(0, 20));
      if (output.lock.args.toLowerCase() !== expected) {
        throw new FundingCheckError(
          `On-chain transaction found but pubkey hash mismatched: ${output.lock.args}`,
        );
      }
      const capacity = BigInt(output.capacity);
      if (a.udtTypeScript === null && a.capacity > capacity) {
        throw new FundingCheckError(
          `On-chain transaction found but capacity mismatched: on chain capacity ${capacity} smaller than announced channel capacity ${a.capacity}`,
        );
      }
      const header = await chain.call<{ timestamp?: string } | null>('get_header', [
        got.tx_status.block_hash,
      ]);
      if (!header || typeof header.timestamp !== 'string') {
        throw new FundingCheckError(`Unable to find block ${got.tx_status.block_hash} for channel outpoint`);
      }
      return BigInt(header.timestamp);
    },
  };
}
