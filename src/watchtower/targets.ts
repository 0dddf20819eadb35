/**
 * What the watcher watches: one target per funding cell, from the node's own channels (same
 * database) and from the channels callers registered over RPC.
 */
import { ccc } from '@ckb-ccc/core';
import type { MachineEnv } from '../channel/index.ts';
import {
  buildCommitment,
  type Channel,
  commitmentCandidates,
  deriveChannelKeys,
  hasFlag,
  pubOf,
  settlementScript,
  type Tlc,
  tlcSecret,
  toScript,
} from '../channel/index.ts';
import { blake160 } from '../crypto/index.ts';
import type { SettlementData, WatchedChannel } from './types.ts';

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
  /** What settling a commitment after its delay needs; absent = the watchtower only revokes. */
  settlement?: SettlementKeys;
}

export interface SettlementKeys {
  /** The settlement script of a fresh commitment cell with these args (ours or the peer's), or null. */
  script(args: Uint8Array, peers: boolean): Uint8Array | null;
  /** Our settlement (party) key. */
  partyKey: Uint8Array;
  /** Our TLC keys (matched to a TLC entry by their hash). */
  tlcKeys: Uint8Array[];
  /** Whether to take our share of our own commitment (the channel layer does it for its channels). */
  settleOwnParty: boolean;
  /**
   * Where what we settle goes: the channel owner's shutdown script. Null = the watchtower's own
   * wallet (the reference's way; a standalone watchtower without a revocation output to learn
   * the owner's script from).
   */
  payTo: ccc.Script | null;
  /** Preimages the data source knows, by the first 20 bytes of the payment hash (hex). */
  preimages(): Map<string, Uint8Array>;
}

const eq = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);
const versionOf = (args: Uint8Array) => ccc.numBeFromBytes(args.subarray(28, 36));

/** A script matches args when its hash is the one the args commit to. */
function matching(args: Uint8Array, candidates: (Uint8Array | null)[]): Uint8Array | null {
  return candidates.find((s) => s && eq(blake160(s), args.subarray(36, 56))) ?? null;
}

/**
 * The preimage the node decided to fulfil a TLC it received with (a paid invoice, a forward paid
 * downstream, a preimage learned on chain), if any.
 */
export type PreimageFor = (channelId: string, tlc: Tlc) => string | undefined;

/** Settlement of the node's own channel: scripts rebuilt from the channel state, keys from its seed. */
function ownSettlement(ch: Channel, env: MachineEnv, preimageFor?: PreimageFor): SettlementKeys {
  // Derived on first use: most passes never settle anything, and derivation is EC work.
  let derived: ReturnType<typeof deriveChannelKeys> | undefined;
  const k = () => (derived ??= deriveChannelKeys(bytes(ch.seed)));
  let tlcSecrets: Uint8Array[] | undefined;
  return {
    // The state as it stands: in a quiet channel it is what the latest commitments hold (their
    // version aside); the hash check against the args rejects anything else.
    script(args, peers) {
      const v = versionOf(args);
      const n = peers ? { ...ch.commitmentNumbers, local: v } : { ...ch.commitmentNumbers, remote: v };
      // Mid-round, the commitment on chain may predate the announced updates (views.ts).
      return matching(
        args,
        commitmentCandidates(ch, peers).map(
          (c) => buildCommitment({ ...c, commitmentNumbers: n }, peers, env).script,
        ),
      );
    },
    get partyKey() {
      return k().tlcBaseKey;
    },
    // Every TLC of the channel as it stands or as the last round left it, each with its own key
    // (`tlc-keys.ts`), and the base key for TLCs of channels from before tweaked keys.
    get tlcKeys() {
      tlcSecrets ??= [
        k().tlcBaseKey,
        ...ch.tlcs.filter((t) => t.createdAt || t.keyTag).map((t) => tlcSecret(k(), t)),
      ];
      return tlcSecrets;
    },
    settleOwnParty: false,
    payTo: toScript(ch.local.shutdownScript),
    preimages() {
      const m = new Map<string, Uint8Array>();
      for (const t of ch.tlcs) {
        const p = t.removal?.preimage ?? (t.offered ? undefined : preimageFor?.(ch.id, t));
        if (p) m.set(t.paymentHash.slice(0, 42), bytes(p));
      }
      return m;
    },
  };
}

/** The settlement script a SettlementData describes, for a commitment held by us or by the peer. */
export function scriptFromSettlementData(
  d: SettlementData,
  holderIsRemote: boolean,
  localPartyPub: Uint8Array,
  remotePartyPub: Uint8Array,
): Uint8Array {
  const holderOffered = (t: SettlementData['tlcs'][number]) => t.tlcId.offered !== holderIsRemote;
  const byId = (x: { tlcId: { id: bigint } }, y: { tlcId: { id: bigint } }) =>
    x.tlcId.id < y.tlcId.id ? -1 : x.tlcId.id > y.tlcId.id ? 1 : 0;
  const ordered = [
    ...d.tlcs.filter(holderOffered).sort(byId),
    ...d.tlcs.filter((t) => !holderOffered(t)).sort(byId),
  ];
  const localPkh = blake160(localPartyPub);
  const remotePkh = blake160(remotePartyPub);
  return settlementScript(
    ordered.map((t) => {
      const mine = blake160(pubOf(bytes(t.localKey)));
      const theirs = blake160(bytes(t.remoteKey));
      return {
        offeredByHolder: holderOffered(t),
        hashAlgorithm: t.hashAlgorithm === 'sha256' ? 1 : 0,
        amount: t.paymentAmount,
        paymentHash: bytes(t.paymentHash),
        holderKeyHash: holderIsRemote ? theirs : mine,
        otherKeyHash: holderIsRemote ? mine : theirs,
        expiry: t.expiry,
      };
    }),
    holderIsRemote
      ? { holderPkh: remotePkh, holderAmount: d.remoteAmount, otherPkh: localPkh, otherAmount: d.localAmount }
      : {
          holderPkh: localPkh,
          holderAmount: d.localAmount,
          otherPkh: remotePkh,
          otherAmount: d.remoteAmount,
        },
  );
}

function rpcSettlement(c: WatchedChannel): SettlementKeys {
  const partyKey = bytes(c.localSettlementKey);
  const all = [c.localSettlementData, c.remoteSettlementData, c.pendingRemoteSettlementData];
  return {
    script(args, peers) {
      const localPub = pubOf(partyKey);
      const remotePub = bytes(c.remoteSettlementKey);
      const data = peers ? [c.remoteSettlementData, c.pendingRemoteSettlementData] : [c.localSettlementData];
      return matching(
        args,
        data.map((d) => scriptFromSettlementData(d, peers, localPub, remotePub)),
      );
    },
    partyKey,
    tlcKeys: [...new Set(all.flatMap((d) => d.tlcs.map((t) => t.localKey)))].map(bytes),
    settleOwnParty: true,
    // The revocation output pays the owner's shutdown script: the best guess of where it wants funds.
    payTo: c.revocationData ? ccc.CellOutput.fromBytes(c.revocationData.output).lock : null,
    preimages: () => new Map(),
  };
}

/** The node's own channels: funded, and not closed cooperatively. */
export function ownChannelTargets(
  channels: Channel[],
  env?: MachineEnv,
  preimageFor?: PreimageFor,
): WatchTarget[] {
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
      settlement: env ? ownSettlement(ch, env, preimageFor) : undefined,
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
      settlement: rpcSettlement(c),
    };
  });
}
