/**
 * Molecule codecs of the channel messages of the reference's `fiber.mol` (FiberMessage union ids
 * 1–18, `docs/reference/fiber-channel-protocol.md` §1). Tables are read in molecule's
 * "compatible" mode (extra trailing fields ignored), structs must have their exact size.
 * Every decode failure is a P2pError('Malformed'), never another exception.
 */
import { ccc } from '@ckb-ccc/core';
import {
  concat,
  fixed,
  fixvec,
  MoleculeError,
  readCompatibleTable,
  readFixvec,
  readTable,
  readU32le,
  readUintLe,
  table,
  u32le,
  uintLe,
} from '../codec/index.ts';
import type { FiberMessage, FiberMessageKind } from '../p2p/index.ts';
import { malformed, P2pError } from '../p2p/index.ts';

export type Bytes = Uint8Array;

export interface OpenChannel {
  chainHash: Bytes;
  channelId: Bytes;
  fundingUdtTypeScript: ccc.Script | null;
  fundingAmount: bigint;
  shutdownScript: ccc.Script;
  reservedCkbAmount: bigint;
  fundingFeeRate: bigint;
  commitmentFeeRate: bigint;
  maxTlcValueInFlight: bigint;
  maxTlcNumberInFlight: bigint;
  commitmentDelayEpoch: bigint;
  fundingPubkey: Bytes;
  tlcBasepoint: Bytes;
  firstPerCommitmentPoint: Bytes;
  secondPerCommitmentPoint: Bytes;
  channelAnnouncementNonce: Bytes | null;
  nextCommitmentNonce: Bytes;
  nextRevocationNonce: Bytes;
  channelFlags: number;
}

export interface AcceptChannel {
  channelId: Bytes;
  fundingAmount: bigint;
  shutdownScript: ccc.Script;
  reservedCkbAmount: bigint;
  maxTlcValueInFlight: bigint;
  maxTlcNumberInFlight: bigint;
  fundingPubkey: Bytes;
  tlcBasepoint: Bytes;
  firstPerCommitmentPoint: Bytes;
  secondPerCommitmentPoint: Bytes;
  channelAnnouncementNonce: Bytes | null;
  nextCommitmentNonce: Bytes;
  nextRevocationNonce: Bytes;
}

export interface TxSignatures {
  channelId: Bytes;
  witnesses: Bytes[];
}
export interface TxUpdate {
  channelId: Bytes;
  tx: ccc.Transaction;
}
export interface TxComplete {
  channelId: Bytes;
  nextCommitmentNonce: Bytes;
}
export interface TxAbort {
  channelId: Bytes;
  message: Bytes;
}
export interface TxInitRBF {
  channelId: Bytes;
  feeRate: bigint;
}
export interface TxAckRBF {
  channelId: Bytes;
}
export interface CommitmentSigned {
  channelId: Bytes;
  fundingTxPartialSignature: Bytes;
  nextCommitmentNonce: Bytes;
}
export interface ChannelReady {
  channelId: Bytes;
}
export interface UpdateTlcInfo {
  channelId: Bytes;
  timestamp: bigint;
  channelFlags: number;
  tlcExpiryDelta: bigint;
  tlcMinimumValue: bigint;
  tlcFeeProportionalMillionths: bigint;
}
export interface AddTlc {
  channelId: Bytes;
  tlcId: bigint;
  amount: bigint;
  paymentHash: Bytes;
  /** Absolute unix time in ms. */
  expiry: bigint;
  /** 0 = CKB blake2b, 1 = sha256. */
  hashAlgorithm: number;
  onionPacket: Bytes;
}
export type RemoveTlcReason = { fulfill: Bytes } | { fail: Bytes };
export interface RemoveTlc {
  channelId: Bytes;
  tlcId: bigint;
  reason: RemoveTlcReason;
}
export interface RevokeAndAck {
  channelId: Bytes;
  revocationPartialSignature: Bytes;
  nextPerCommitmentPoint: Bytes;
  nextRevocationNonce: Bytes;
}
export interface Shutdown {
  channelId: Bytes;
  feeRate: bigint;
  closeScript: ccc.Script;
}
export interface ClosingSigned {
  channelId: Bytes;
  partialSignature: Bytes;
}
export interface ReestablishChannel {
  channelId: Bytes;
  localCommitmentNumber: bigint;
  remoteCommitmentNumber: bigint;
}
export interface AnnouncementSignatures {
  channelId: Bytes;
  channelOutpoint: Bytes;
  nodeSignature: Bytes;
  partialSignature: Bytes;
}

export interface ChannelMessageBodies {
  OpenChannel: OpenChannel;
  AcceptChannel: AcceptChannel;
  TxSignatures: TxSignatures;
  TxUpdate: TxUpdate;
  TxComplete: TxComplete;
  TxAbort: TxAbort;
  TxInitRBF: TxInitRBF;
  TxAckRBF: TxAckRBF;
  CommitmentSigned: CommitmentSigned;
  ChannelReady: ChannelReady;
  UpdateTlcInfo: UpdateTlcInfo;
  AddTlc: AddTlc;
  RemoveTlc: RemoveTlc;
  RevokeAndAck: RevokeAndAck;
  Shutdown: Shutdown;
  ClosingSigned: ClosingSigned;
  ReestablishChannel: ReestablishChannel;
  AnnouncementSignatures: AnnouncementSignatures;
}
export type ChannelMessageKind = keyof ChannelMessageBodies;
export type ChannelMessage = {
  [K in ChannelMessageKind]: { type: K; value: ChannelMessageBodies[K] };
}[ChannelMessageKind];

// ---- primitives -------------------------------------------------------------------------------

/** A number field we encode: out of range is a P2pError, as every defect of what we send. */
function uintField(v: bigint, bytes: number, what: string): Bytes {
  if (v < 0n || v >> BigInt(8 * bytes) !== 0n) throw new P2pError('Malformed', `${what} out of range`);
  return uintLe(v, bytes);
}
const u64 = (v: bigint, w: string) => uintField(v, 8, w);
const u128 = (v: bigint, w: string) => uintField(v, 16, w);
const rd64 = (b: Bytes, w: string) => readUintLe(b, 8, w);
const rd128 = (b: Bytes, w: string) => readUintLe(b, 16, w);

/** A field we encode must have its exact size (a P2pError; the reader's check is `fixed`). */
function exactSize(b: Bytes, size: number, what: string): Bytes {
  if (b.length !== size) throw new P2pError('Malformed', `${what} must be ${size} bytes`);
  return b;
}

function encScript(s: ccc.ScriptLike): Bytes {
  return ccc.Script.from(s).toBytes();
}
function decScript(b: Bytes, what: string): ccc.Script {
  const f = readCompatibleTable(b, what, 3);
  fixed(f[0]!, 32, `${what}.code_hash`);
  fixed(f[1]!, 1, `${what}.hash_type`);
  readFixvec(f[2]!, `${what}.args`);
  try {
    return ccc.Script.fromBytes(b);
  } catch (e) {
    throw malformed(`${what}: ${(e as Error).message}`);
  }
}
function encOpt(b: Bytes | null): Bytes {
  return b ?? new Uint8Array(0);
}

/** A struct of fixed-size fields: splits `b` into the given sizes or fails. */
function splitStruct(b: Bytes, sizes: number[], what: string): Bytes[] {
  const total = sizes.reduce((a, c) => a + c, 0);
  if (b.length !== total) throw malformed(`${what}: expected ${total} bytes, got ${b.length}`);
  const out: Bytes[] = [];
  let at = 0;
  for (const s of sizes) {
    out.push(b.slice(at, at + s));
    at += s;
  }
  return out;
}

// ---- codecs -----------------------------------------------------------------------------------

interface Codec<T> {
  encode(v: T): Bytes;
  decode(b: Bytes): T;
}

const openChannel: Codec<OpenChannel> = {
  encode: (v) =>
    table([
      exactSize(v.chainHash, 32, 'chain_hash'),
      exactSize(v.channelId, 32, 'channel_id'),
      v.fundingUdtTypeScript ? encScript(v.fundingUdtTypeScript) : new Uint8Array(0),
      u128(v.fundingAmount, 'funding_amount'),
      encScript(v.shutdownScript),
      u64(v.reservedCkbAmount, 'reserved_ckb_amount'),
      u64(v.fundingFeeRate, 'funding_fee_rate'),
      u64(v.commitmentFeeRate, 'commitment_fee_rate'),
      u128(v.maxTlcValueInFlight, 'max_tlc_value_in_flight'),
      u64(v.maxTlcNumberInFlight, 'max_tlc_number_in_flight'),
      u64(v.commitmentDelayEpoch, 'commitment_delay_epoch'),
      exactSize(v.fundingPubkey, 33, 'funding_pubkey'),
      exactSize(v.tlcBasepoint, 33, 'tlc_basepoint'),
      exactSize(v.firstPerCommitmentPoint, 33, 'first_per_commitment_point'),
      exactSize(v.secondPerCommitmentPoint, 33, 'second_per_commitment_point'),
      encOpt(
        v.channelAnnouncementNonce && exactSize(v.channelAnnouncementNonce, 66, 'channel_announcement_nonce'),
      ),
      exactSize(v.nextCommitmentNonce, 66, 'next_commitment_nonce'),
      exactSize(v.nextRevocationNonce, 66, 'next_revocation_nonce'),
      new Uint8Array([v.channelFlags & 0xff]),
    ]),
  decode: (b) => {
    const f = readCompatibleTable(b, 'OpenChannel', 19);
    const w = (i: number) => f[i]!;
    return {
      chainHash: fixed(w(0), 32, 'chain_hash').slice(),
      channelId: fixed(w(1), 32, 'channel_id').slice(),
      fundingUdtTypeScript: w(2).length === 0 ? null : decScript(w(2), 'funding_udt_type_script'),
      fundingAmount: rd128(w(3), 'funding_amount'),
      shutdownScript: decScript(w(4), 'shutdown_script'),
      reservedCkbAmount: rd64(w(5), 'reserved_ckb_amount'),
      fundingFeeRate: rd64(w(6), 'funding_fee_rate'),
      commitmentFeeRate: rd64(w(7), 'commitment_fee_rate'),
      maxTlcValueInFlight: rd128(w(8), 'max_tlc_value_in_flight'),
      maxTlcNumberInFlight: rd64(w(9), 'max_tlc_number_in_flight'),
      commitmentDelayEpoch: rd64(w(10), 'commitment_delay_epoch'),
      fundingPubkey: fixed(w(11), 33, 'funding_pubkey').slice(),
      tlcBasepoint: fixed(w(12), 33, 'tlc_basepoint').slice(),
      firstPerCommitmentPoint: fixed(w(13), 33, 'first_per_commitment_point').slice(),
      secondPerCommitmentPoint: fixed(w(14), 33, 'second_per_commitment_point').slice(),
      channelAnnouncementNonce:
        w(15).length === 0 ? null : fixed(w(15), 66, 'channel_announcement_nonce').slice(),
      nextCommitmentNonce: fixed(w(16), 66, 'next_commitment_nonce').slice(),
      nextRevocationNonce: fixed(w(17), 66, 'next_revocation_nonce').slice(),
      channelFlags: fixed(w(18), 1, 'channel_flags')[0] as number,
    };
  },
};

const acceptChannel: Codec<AcceptChannel> = {
  encode: (v) =>
    table([
      exactSize(v.channelId, 32, 'channel_id'),
      u128(v.fundingAmount, 'funding_amount'),
      encScript(v.shutdownScript),
      u64(v.reservedCkbAmount, 'reserved_ckb_amount'),
      u128(v.maxTlcValueInFlight, 'max_tlc_value_in_flight'),
      u64(v.maxTlcNumberInFlight, 'max_tlc_number_in_flight'),
      exactSize(v.fundingPubkey, 33, 'funding_pubkey'),
      exactSize(v.tlcBasepoint, 33, 'tlc_basepoint'),
      exactSize(v.firstPerCommitmentPoint, 33, 'first_per_commitment_point'),
      exactSize(v.secondPerCommitmentPoint, 33, 'second_per_commitment_point'),
      encOpt(
        v.channelAnnouncementNonce && exactSize(v.channelAnnouncementNonce, 66, 'channel_announcement_nonce'),
      ),
      exactSize(v.nextCommitmentNonce, 66, 'next_commitment_nonce'),
      exactSize(v.nextRevocationNonce, 66, 'next_revocation_nonce'),
    ]),
  decode: (b) => {
    const f = readCompatibleTable(b, 'AcceptChannel', 13);
    const w = (i: number) => f[i]!;
    return {
      channelId: fixed(w(0), 32, 'channel_id').slice(),
      fundingAmount: rd128(w(1), 'funding_amount'),
      shutdownScript: decScript(w(2), 'shutdown_script'),
      reservedCkbAmount: rd64(w(3), 'reserved_ckb_amount'),
      maxTlcValueInFlight: rd128(w(4), 'max_tlc_value_in_flight'),
      maxTlcNumberInFlight: rd64(w(5), 'max_tlc_number_in_flight'),
      fundingPubkey: fixed(w(6), 33, 'funding_pubkey').slice(),
      tlcBasepoint: fixed(w(7), 33, 'tlc_basepoint').slice(),
      firstPerCommitmentPoint: fixed(w(8), 33, 'first_per_commitment_point').slice(),
      secondPerCommitmentPoint: fixed(w(9), 33, 'second_per_commitment_point').slice(),
      channelAnnouncementNonce:
        w(10).length === 0 ? null : fixed(w(10), 66, 'channel_announcement_nonce').slice(),
      nextCommitmentNonce: fixed(w(11), 66, 'next_commitment_nonce').slice(),
      nextRevocationNonce: fixed(w(12), 66, 'next_revocation_nonce').slice(),
    };
  },
};

const txSignatures: Codec<TxSignatures> = {
  encode: (v) => table([exactSize(v.channelId, 32, 'channel_id'), table(v.witnesses.map((w) => fixvec(w)))]),
  decode: (b) => {
    const f = readCompatibleTable(b, 'TxSignatures', 2);
    return {
      channelId: fixed(f[0]!, 32, 'channel_id').slice(),
      witnesses: readTable(f[1]!, 'TxSignatures.witnesses').map((w) => readFixvec(w, 'witness').slice()),
    };
  },
};

const txUpdate: Codec<TxUpdate> = {
  encode: (v) => table([exactSize(v.channelId, 32, 'channel_id'), v.tx.toBytes()]),
  decode: (b) => {
    const f = readCompatibleTable(b, 'TxUpdate', 2);
    let tx: ccc.Transaction;
    try {
      tx = ccc.Transaction.fromBytes(f[1]!);
    } catch (e) {
      throw malformed(`TxUpdate.tx: ${(e as Error).message}`);
    }
    // ccc is lenient; re-encoding must give the same bytes or the input was not canonical.
    if (Buffer.compare(tx.toBytes(), f[1]!) !== 0)
      throw malformed('TxUpdate.tx: not a canonical Transaction');
    return { channelId: fixed(f[0]!, 32, 'channel_id').slice(), tx };
  },
};

const txComplete: Codec<TxComplete> = {
  encode: (v) =>
    concat(exactSize(v.channelId, 32, 'channel_id'), exactSize(v.nextCommitmentNonce, 66, 'nonce')),
  decode: (b) => {
    const [c, n] = splitStruct(b, [32, 66], 'TxComplete');
    return { channelId: c!, nextCommitmentNonce: n! };
  },
};

const txAbort: Codec<TxAbort> = {
  encode: (v) => table([exactSize(v.channelId, 32, 'channel_id'), fixvec(v.message)]),
  decode: (b) => {
    const f = readCompatibleTable(b, 'TxAbort', 2);
    return {
      channelId: fixed(f[0]!, 32, 'channel_id').slice(),
      message: readFixvec(f[1]!, 'TxAbort.message').slice(),
    };
  },
};

const txInitRbf: Codec<TxInitRBF> = {
  encode: (v) => table([exactSize(v.channelId, 32, 'channel_id'), u64(v.feeRate, 'fee_rate')]),
  decode: (b) => {
    const f = readCompatibleTable(b, 'TxInitRBF', 2);
    return { channelId: fixed(f[0]!, 32, 'channel_id').slice(), feeRate: rd64(f[1]!, 'fee_rate') };
  },
};

const txAckRbf: Codec<TxAckRBF> = {
  encode: (v) => table([exactSize(v.channelId, 32, 'channel_id')]),
  decode: (b) => ({ channelId: fixed(readCompatibleTable(b, 'TxAckRBF', 1)[0]!, 32, 'channel_id').slice() }),
};

const commitmentSigned: Codec<CommitmentSigned> = {
  encode: (v) =>
    concat(
      exactSize(v.channelId, 32, 'channel_id'),
      exactSize(v.fundingTxPartialSignature, 32, 'partial_signature'),
      exactSize(v.nextCommitmentNonce, 66, 'nonce'),
    ),
  decode: (b) => {
    const [c, s, n] = splitStruct(b, [32, 32, 66], 'CommitmentSigned');
    return { channelId: c!, fundingTxPartialSignature: s!, nextCommitmentNonce: n! };
  },
};

const channelReady: Codec<ChannelReady> = {
  encode: (v) => exactSize(v.channelId, 32, 'channel_id').slice(),
  decode: (b) => ({ channelId: splitStruct(b, [32], 'ChannelReady')[0]! }),
};

const updateTlcInfo: Codec<UpdateTlcInfo> = {
  encode: (v) =>
    concat(
      exactSize(v.channelId, 32, 'channel_id'),
      u64(v.timestamp, 'timestamp'),
      uintField(BigInt(v.channelFlags), 4, 'channel_flags'),
      u64(v.tlcExpiryDelta, 'tlc_expiry_delta'),
      u128(v.tlcMinimumValue, 'tlc_minimum_value'),
      u128(v.tlcFeeProportionalMillionths, 'tlc_fee_proportional_millionths'),
    ),
  decode: (b) => {
    const [c, t, f, d, m, p] = splitStruct(b, [32, 8, 4, 8, 16, 16], 'UpdateTlcInfo');
    return {
      channelId: c!,
      timestamp: rd64(t!, 'timestamp'),
      channelFlags: readU32le(f!, 0),
      tlcExpiryDelta: rd64(d!, 'tlc_expiry_delta'),
      tlcMinimumValue: rd128(m!, 'tlc_minimum_value'),
      tlcFeeProportionalMillionths: rd128(p!, 'tlc_fee_proportional_millionths'),
    };
  },
};

const addTlc: Codec<AddTlc> = {
  encode: (v) =>
    table([
      exactSize(v.channelId, 32, 'channel_id'),
      u64(v.tlcId, 'tlc_id'),
      u128(v.amount, 'amount'),
      exactSize(v.paymentHash, 32, 'payment_hash'),
      u64(v.expiry, 'expiry'),
      new Uint8Array([v.hashAlgorithm & 0xff]),
      fixvec(v.onionPacket),
    ]),
  decode: (b) => {
    const f = readCompatibleTable(b, 'AddTlc', 7);
    return {
      channelId: fixed(f[0]!, 32, 'channel_id').slice(),
      tlcId: rd64(f[1]!, 'tlc_id'),
      amount: rd128(f[2]!, 'amount'),
      paymentHash: fixed(f[3]!, 32, 'payment_hash').slice(),
      expiry: rd64(f[4]!, 'expiry'),
      hashAlgorithm: fixed(f[5]!, 1, 'hash_algorithm')[0] as number,
      onionPacket: readFixvec(f[6]!, 'onion_packet').slice(),
    };
  },
};

const removeTlc: Codec<RemoveTlc> = {
  encode: (v) => {
    const reason =
      'fulfill' in v.reason
        ? concat(u32le(0), exactSize(v.reason.fulfill, 32, 'payment_preimage'))
        : concat(u32le(1), table([fixvec(v.reason.fail)]));
    return table([exactSize(v.channelId, 32, 'channel_id'), u64(v.tlcId, 'tlc_id'), reason]);
  },
  decode: (b) => {
    const f = readCompatibleTable(b, 'RemoveTlc', 3);
    const r = f[2]!;
    if (r.length < 4) throw malformed('RemoveTlc.reason: shorter than its union header');
    const id = readU32le(r, 0);
    const body = r.subarray(4);
    let reason: RemoveTlcReason;
    if (id === 0) reason = { fulfill: fixed(body, 32, 'payment_preimage').slice() };
    else if (id === 1)
      reason = { fail: readFixvec(readCompatibleTable(body, 'TlcErrPacket', 1)[0]!, 'onion_packet').slice() };
    else throw malformed(`RemoveTlc.reason: unknown union item ${id}`);
    return {
      channelId: fixed(f[0]!, 32, 'channel_id').slice(),
      tlcId: rd64(f[1]!, 'tlc_id'),
      reason,
    };
  },
};

const revokeAndAck: Codec<RevokeAndAck> = {
  encode: (v) =>
    concat(
      exactSize(v.channelId, 32, 'channel_id'),
      exactSize(v.revocationPartialSignature, 32, 'partial_signature'),
      exactSize(v.nextPerCommitmentPoint, 33, 'next_per_commitment_point'),
      exactSize(v.nextRevocationNonce, 66, 'nonce'),
    ),
  decode: (b) => {
    const [c, s, p, n] = splitStruct(b, [32, 32, 33, 66], 'RevokeAndAck');
    return {
      channelId: c!,
      revocationPartialSignature: s!,
      nextPerCommitmentPoint: p!,
      nextRevocationNonce: n!,
    };
  },
};

const shutdown: Codec<Shutdown> = {
  encode: (v) =>
    table([exactSize(v.channelId, 32, 'channel_id'), u64(v.feeRate, 'fee_rate'), encScript(v.closeScript)]),
  decode: (b) => {
    const f = readCompatibleTable(b, 'Shutdown', 3);
    return {
      channelId: fixed(f[0]!, 32, 'channel_id').slice(),
      feeRate: rd64(f[1]!, 'fee_rate'),
      closeScript: decScript(f[2]!, 'close_script'),
    };
  },
};

const closingSigned: Codec<ClosingSigned> = {
  encode: (v) =>
    concat(exactSize(v.channelId, 32, 'channel_id'), exactSize(v.partialSignature, 32, 'partial_signature')),
  decode: (b) => {
    const [c, s] = splitStruct(b, [32, 32], 'ClosingSigned');
    return { channelId: c!, partialSignature: s! };
  },
};

const reestablish: Codec<ReestablishChannel> = {
  encode: (v) =>
    table([
      exactSize(v.channelId, 32, 'channel_id'),
      u64(v.localCommitmentNumber, 'local_commitment_number'),
      u64(v.remoteCommitmentNumber, 'remote_commitment_number'),
    ]),
  decode: (b) => {
    const f = readCompatibleTable(b, 'ReestablishChannel', 3);
    return {
      channelId: fixed(f[0]!, 32, 'channel_id').slice(),
      localCommitmentNumber: rd64(f[1]!, 'local_commitment_number'),
      remoteCommitmentNumber: rd64(f[2]!, 'remote_commitment_number'),
    };
  },
};

const announcementSignatures: Codec<AnnouncementSignatures> = {
  encode: (v) =>
    table([
      exactSize(v.channelId, 32, 'channel_id'),
      exactSize(v.channelOutpoint, 36, 'channel_outpoint'),
      exactSize(v.nodeSignature, 64, 'node_signature'),
      exactSize(v.partialSignature, 32, 'partial_signature'),
    ]),
  decode: (b) => {
    const f = readCompatibleTable(b, 'AnnouncementSignatures', 4);
    return {
      channelId: fixed(f[0]!, 32, 'channel_id').slice(),
      channelOutpoint: fixed(f[1]!, 36, 'channel_outpoint').slice(),
      nodeSignature: fixed(f[2]!, 64, 'node_signature').slice(),
      partialSignature: fixed(f[3]!, 32, 'partial_signature').slice(),
    };
  },
};

export const CHANNEL_CODECS: { [K in ChannelMessageKind]: Codec<ChannelMessageBodies[K]> } = {
  OpenChannel: openChannel,
  AcceptChannel: acceptChannel,
  TxSignatures: txSignatures,
  TxUpdate: txUpdate,
  TxComplete: txComplete,
  TxAbort: txAbort,
  TxInitRBF: txInitRbf,
  TxAckRBF: txAckRbf,
  CommitmentSigned: commitmentSigned,
  ChannelReady: channelReady,
  UpdateTlcInfo: updateTlcInfo,
  AddTlc: addTlc,
  RemoveTlc: removeTlc,
  RevokeAndAck: revokeAndAck,
  Shutdown: shutdown,
  ClosingSigned: closingSigned,
  ReestablishChannel: reestablish,
  AnnouncementSignatures: announcementSignatures,
};

export function isChannelMessageKind(k: FiberMessageKind): k is ChannelMessageKind {
  return k in CHANNEL_CODECS;
}

/** Body bytes of a channel message (without the union id). */
export function encodeChannelBody(msg: ChannelMessage): Bytes {
  return (CHANNEL_CODECS[msg.type] as Codec<unknown>).encode(msg.value);
}

/** Decodes a channel message body; throws P2pError('Malformed') on any defect. */
export function decodeChannelBody<K extends ChannelMessageKind>(
  kind: K,
  body: Bytes,
): ChannelMessageBodies[K] {
  try {
    return (CHANNEL_CODECS[kind] as Codec<ChannelMessageBodies[K]>).decode(body);
  } catch (e) {
    if (e instanceof P2pError) throw e;
    if (e instanceof MoleculeError) throw malformed(e.message);
    throw malformed(`${kind}: ${(e as Error).message}`);
  }
}

/** The FiberMessage (raw form) that carries a channel message, for `PeerManager.send`. */
export function toFiberMessage(msg: ChannelMessage): FiberMessage {
  return { type: msg.type, raw: encodeChannelBody(msg) } as FiberMessage;
}

/** The channel message in a received FiberMessage, or null when it is not a channel kind. */
export function fromFiberMessage(msg: FiberMessage): ChannelMessage | null {
  if (!isChannelMessageKind(msg.type)) return null;
  if (!('raw' in msg)) return null;
  return { type: msg.type, value: decodeChannelBody(msg.type, msg.raw) } as ChannelMessage;
}

/** The channel id of any channel message (every kind carries one first). */
export function channelIdOf(msg: ChannelMessage): Bytes {
  return msg.value.channelId;
}
