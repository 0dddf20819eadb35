/**
 * What the watcher watches: one target per funding cell, from the node's own channels (same
 * database) and from the channels callers registered over RPC.
 */
import { ccc } from '@ckb-ccc/core';
import { toScript } from '../channel/machine.ts';
import { type Channel, hasFlag } from '../channel/state.ts';
import type { WatchedChannel } from './types.ts';

const bytes = (h: string) => ccc.bytesFrom(h);

export interface CommitmentCell {
  output: ccc.CellOutput;
  data: Uint8Array;
}

export interface WatchTarget {
  /** Who the data belongs to (`''` = the node itself): preimages learned are kept under it. */
  nodeId: string;
  channelId: string;
  localFundingPubkey: Uint8Array;
  remoteFundingPubkey: Uint8Array;
  udt: ccc.Script | null;
  /** Extra cell deps a spend of the commitment cell needs (the UDT's). */
  udtCellDeps: ccc.CellDep[];
  revocation: {
    version: bigint;
    signature: Uint8Array;
    /** The pre-signed revocation output and its data, given the revoked commitment cell. */
    output(cell: CommitmentCell): CommitmentCell;
  } | null;
}

/** The node's own channels: funded, and not closed cooperatively. */
export function ownChannelTargets(channels: Channel[]): WatchTarget[] {
  const out: WatchTarget[] = [];
  for (const ch of channels) {
    if (!ch.remote || !ch.fundingTxHash) continue;
    if (ch.state === 'CLOSED' && hasFlag(ch, 'COOPERATIVE')) continue;
    const rev = ch.revocation;
    const sweepLock = toScript(ch.local.shutdownScript);
    out.push({
      nodeId: '',
      channelId: ch.id,
      localFundingPubkey: bytes(ch.local.fundingPubkey),
      remoteFundingPubkey: bytes(ch.remote.fundingPubkey),
      udt: ch.udt ? toScript(ch.udt) : null,
      udtCellDeps: (ch.udtCellDeps ?? []).map((d) => ccc.CellDep.from(d)),
      // The peer signed the whole commitment cell (same capacity, type and data in every
      // version) over to our shutdown script.
      revocation: rev
        ? {
            version: rev.version,
            signature: bytes(rev.signature),
            output: (cell) => ({
              output: ccc.CellOutput.from({
                capacity: cell.output.capacity,
                lock: sweepLock,
                type: cell.output.type,
              }),
              data: cell.data,
            }),
          }
        : null,
    });
  }
  return out;
}

/** Channels registered over RPC; `udtCellDeps` resolves a UDT's deps (whitelist). */
export function rpcChannelTargets(
  channels: WatchedChannel[],
  udtCellDeps: (s: ccc.Script) => ccc.CellDep[] = () => [],
): WatchTarget[] {
  return channels.map((c) => {
    const udt = c.fundingUdtTypeScript
      ? ccc.Script.from({
          codeHash: c.fundingUdtTypeScript.code_hash,
          hashType: c.fundingUdtTypeScript.hash_type as ccc.HashType,
          args: c.fundingUdtTypeScript.args,
        })
      : null;
    const r = c.revocationData;
    return {
      nodeId: c.nodeId,
      channelId: c.channelId,
      localFundingPubkey: bytes(c.localFundingPubkey),
      remoteFundingPubkey: bytes(c.remoteFundingPubkey),
      udt,
      udtCellDeps: udt ? udtCellDeps(udt) : [],
      revocation: r
        ? {
            version: r.commitmentNumber,
            signature: bytes(r.aggregatedSignature),
            output: () => ({
              output: ccc.CellOutput.fromBytes(r.output),
              data: bytes(r.outputData),
            }),
          }
        : null,
    };
  });
}
