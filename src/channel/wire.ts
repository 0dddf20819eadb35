/**
 * Molecule codecs of the channel messages of the reference's `fiber.mol` (FiberMessage union ids
 * 1–18, `../shared/reference/fiber-channel-protocol.md` §1). Tables are read in molecule's
 * "compatible" mode (extra trailing fields ignored), structs must have their exact size.
 * Every decode failure is a P2pError('Malformed'), never another exception.
 */
import { ccc } from '@ckb-ccc/core';
import { malformed, P2pError } from '../p2p/errors.ts';
import type { FiberMessage, FiberMessageKind } from '../p2p/fiber-message.ts';
import {
  concatBytes,
  decodeFixed,
  decodeFixvec,
  decodeTable,
  encodeFixvec,
  encodeTable,
  readU32le,
  u32le,
} from '../p2p/mol.ts';

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

function uintLe(v: bigint, bytes: number, what: string): Bytes {
  if (v < 0n || v >> BigInt(8 * bytes) !== 0n) throw new P2pError('Malformed', `${what} out of range`);
  const out = new Uint8Array(bytes);
  let x = v;
  for (let i = 0; i < bytes; i++) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return out;
}
function readUintLe(b: Bytes, what: string, bytes: number): bigint {
  decodeFixed(b, bytes, what);
  let v = 0n;
  for (let i = bytes - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[i] as number);
  return v;
}
const u64 = (v: bigint, w: string) => uintLe(v, 8, w);
const u128 = (v: bigint, w: string) => uintLe(v, 16, w);
const rd64 = (b: Bytes, w: string) => readUintLe(b, w, 8);
const rd128 = (b: Bytes, w: string) => readUintLe(b, w, 16);

function fixed(b: Bytes, size: number, what: string): Bytes {
  if (b.length !== size) throw new P2pError('Malformed', `${what} must be ${size} bytes`);
  return b;
}

function encScript(s: ccc.ScriptLike): Bytes {
  return ccc.Script.from(s).toBytes();
}
function decScript(b: Bytes, what: string): ccc.Script {
  const f = decodeTable(b, 3, what);
  decodeFixed(f[0]!, 32, `${what}.code_hash`);
  decodeFixed(f[1]!, 1, `${what}.hash_type`);
  decodeFixvec(f[2]!, `${what}.args`);
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
    encodeTable([
      fixed(v.chainHash, 32, 'chain_hash'),
      fixed(v.channelId, 32, 'channel_id'),
      v.fundingUdtTypeScript ? encScript(v.fundingUdtTypeScript) : new Uint8Array(0),
      u128(v.fundingAmount, 'funding_amount'),
      encScript(v.shutdownScript),
      u64(v.reservedCkbAmount, 'reserved_ckb_amount'),
      u64(v.fundingFeeRate, 'funding_fee_rate'),
      u64(v.commitmentFeeRate, 'commitment_fee_rate'),
      u128(v.maxTlcValueInFlight, 'max_tlc_value_in_flight'),
      u64(v.maxTlcNumberInFlight, 'max_tlc_number_in_flight'),
      u64(v.commitmentDelayEpoch, 'commitment_delay_epoch'),
      fixed(v.fundingPubkey, 33, 'funding_pubkey'),
      fixed(v.tlcBasepoint, 33, 'tlc_basepoint'),
      fixed(v.firstPerCommitmentPoint, 33, 'first_per_commitment_point'),
      fixed(v.secondPerCommitmentPoint, 33, 'second_per_commitment_point'),
      encOpt(
        v.channelAnnouncementNonce && fixed(v.channelAnnouncementNonce, 66, 'channel_announcement_nonce'),
      ),
      fixed(v.nextCommitmentNonce, 66, 'next_commitment_nonce'),
      fixed(v.nextRevocationNonce, 66, 'next_revocation_nonce'),
      new Uint8Array([v.channelFlags & 0xff]),
    ]),
  decode: (b) => {
    const f = decodeTable(b, 19, 'OpenChannel');
    const w = (i: number) => f[i]!;
    return {
      chainHash: decodeFixed(w(0), 32, 'chain_hash').slice(),
      channelId: decodeFixed(w(1), 32, 'channel_id').slice(),
      fundingUdtTypeScript: w(2).length === 0 ? null : decScript(w(2), 'funding_udt_type_script'),
      fundingAmount: rd128(w(3), 'funding_amount'),
      shutdownScript: decScript(w(4), 'shutdown_script'),
      reservedCkbAmount: rd64(w(5), 'reserved_ckb_amount'),
      fundingFeeRate: rd64(w(6), 'funding_fee_rate'),
      commitmentFeeRate: rd64(w(7), 'commitment_fee_rate'),
      maxTlcValueInFlight: rd128(w(8), 'max_tlc_value_in_flight'),
      maxTlcNumberInFlight: rd64(w(9), 'max_tlc_number_in_flight'),
      commitmentDelayEpoch: rd64(w(10), 'commitment_delay_epoch'),
      fundingPubkey: decodeFixed(w(11), 33, 'funding_pubkey').slice(),
      tlcBasepoint: decodeFixed(w(12), 33, 'tlc_basepoint').slice(),
      firstPerCommitmentPoint: decodeFixed(w(13), 33, 'first_per_commitment_point').slice(),
      secondPerCommitmentPoint: decodeFixed(w(14), 33, 'second_per_commitment_point').slice(),
      channelAnnouncementNonce:
        w(15).length === 0 ? null : decodeFixed(w(15), 66, 'channel_announcement_nonce').slice(),
      nextCommitmentNonce: decodeFixed(w(16), 66, 'next_commitment_nonce').slice(),
      nextRevocationNonce: decodeFixed(w(17), 66, 'next_revocation_nonce').slice(),
      channelFlags: decodeFixed(w(18), 1, 'channel_flags')[0] as number,
    };
  },
};

const acceptChannel: Codec<AcceptChannel> = {
  encode: (v) =>
    encodeTable([
      fixed(v.channelId, 32, 'channel_id'),
      u128(v.fundingAmount, 'funding_amount'),
      encScript(v.shutdownScript),
      u64(v.reservedCkbAmount, 'reserved_ckb_amount'),
      u128(v.maxTlcValueInFlight, 'max_tlc_value_in_flight'),
      u64(v.maxTlcNumberInFlight, 'max_tlc_number_in_flight'),
      fixed(v.fundingPubkey, 33, 'funding_pubkey'),
      fixed(v.tlcBasepoint, 33, 'tlc_basepoint'),
      fixed(v.firstPerCommitmentPoint, 33, 'first_per_commitment_point'),
      fixed(v.secondPerCommitmentPoint, 33, 'second_per_commitment_point'),
      encOpt(
        v.channelAnnouncementNonce && fixed(v.channelAnnouncementNonce, 66, 'channel_announcement_nonce'),
      ),
      fixed(v.nextCommitmentNonce, 66, 'next_commitment_nonce'),
      fixed(v.nextRevocationNonce, 66, 'next_revocation_nonce'),
    ]),
  decode: (b) => {
    const f = decodeTable(b, 13, 'AcceptChannel');
    const w = (i: number) => f[i]!;
    return {
      channelId: decodeFixed(w(0), 32, 'channel_id').slice(),
      fundingAmount: rd128(w(1), 'funding_amount'),
      shutdownScript: decScript(w(2), 'shutdown_script'),
      reservedCkbAmount: rd64(w(3), 'reserved_ckb_amount'),
      maxTlcValueInFlight: rd128(w(4), 'max_tlc_value_in_flight'),
      maxTlcNumberInFlight: rd64(w(5), 'max_tlc_number_in_flight'),
      fundingPubkey: decodeFixed(w(6), 33, 'funding_pubkey').slice(),
      tlcBasepoint: decodeFixed(w(7), 33, 'tlc_basepoint').slice(),
      firstPerCommitmentPoint: decodeFixed(w(8), 33, 'first_per_commitment_point').slice(),
      secondPerCommitmentPoint: decodeFixed(w(9), 33, 'second_per_commitment_point').slice(),
      channelAnnouncementNonce:
        w(10).length === 0 ? null : decodeFixed(w(10), 66, 'channel_announcement_nonce').slice(),
      nextCommitmentNonce: decodeFixed(w(11), 66, 'next_commitment_nonce').slice(),
      nextRevocationNonce: decodeFixed(w(12), 66, 'next_revocation_nonce').slice(),
    };
  },
};

const txSignatures: Codec<TxSignatures> = {
  encode: (v) =>
    encodeTable([fixed(v.channelId, 32, 'channel_id'), encodeTable(v.witnesses.map((w) => encodeFixvec(w)))]),
  decode: (b) => {
    const f = decodeTable(b, 2, 'TxSignatures');
    return {
      channelId: decodeFixed(f[0]!, 32, 'channel_id').slice(),
      witnesses: decodeTable(f[1]!, 0, 'TxSignatures.witnesses').map((w) =>
        decodeFixvec(w, 'witness').slice(),
      ),
    };
  },
};

const txUpdate: Codec<TxUpdate> = {
  encode: (v) => encodeTable([fixed(v.channelId, 32, 'channel_id'), v.tx.toBytes()]),
  decode: (b) => {
    const f = decodeTable(b, 2, 'TxUpdate');
    let tx: ccc.Transaction;
    try {
      tx = ccc.Transaction.fromBytes(f[1]!);
    } catch (e) {
      throw malformed(`TxUpdate.tx: ${(e as Error).message}`);
    }
    // ccc is lenient; re-encoding must give the same bytes or the input was not canonical.
    if (Buffer.compare(tx.toBytes(), f[1]!) !== 0)
      throw malformed('TxUpdate.tx: not a canonical Transaction');
    return { channelId: decodeFixed(f[0]!, 32, 'channel_id').slice(), tx };
  },
};

const txComplete: Codec<TxComplete> = {
  encode: (v) => concatBytes(fixed(v.channelId, 32, 'channel_id'), fixed(v.nextCommitmentNonce, 66, 'nonce')),
  decode: (b) => {
    const [c, n] = splitStruct(b, [32, 66], 'TxComplete');
    return { channelId: c!, nextCommitmentNonce: n! };
  },
};

const txAbort: Codec<TxAbort> = {
  encode: (v) => encodeTable([fixed(v.channelId, 32, 'channel_id'), encodeFixvec(v.message)]),
  decode: (b) => {
    const f = decodeTable(b, 2, 'TxAbort');
    return {
      channelId: decodeFixed(f[0]!, 32, 'channel_id').slice(),
      message: decodeFixvec(f[1]!, 'TxAbort.message').slice(),
    };
  },
};

const txInitRbf: Codec<TxInitRBF> = {
  encode: (v) => encodeTable([fixed(v.channelId, 32, 'channel_id'), u64(v.feeRate, 'fee_rate')]),
  decode: (b) => {
    const f = decodeTable(b, 2, 'TxInitRBF');
    return { channelId: decodeFixed(f[0]!, 32, 'channel_id').slice(), feeRate: rd64(f[1]!, 'fee_rate') };
  },
};

const txAckRbf: Codec<TxAckRBF> = {
  encode: (v) => encodeTable([fixed(v.channelId, 32, 'channel_id')]),
  decode: (b) => ({ channelId: decodeFixed(decodeTable(b, 1, 'TxAckRBF')[0]!, 32, 'channel_id').slice() }),
};

const commitmentSigned: Codec<CommitmentSigned> = {
  encode: (v) =>
    concatBytes(
      fixed(v.channelId, 32, 'channel_id'),
      fixed(v.fundingTxPartialSignature, 32, 'partial_signature'),
      fixed(v.nextCommitmentNonce, 66, 'nonce'),
    ),
  decode: (b) => {
    const [c, s, n] = splitStruct(b, [32, 32, 66], 'CommitmentSigned');
    return { channelId: c!, fundingTxPartialSignature: s!, nextCommitmentNonce: n! };
  },
};

const channelReady: Codec<ChannelReady> = {
  encode: (v) => fixed(v.channelId, 32, 'channel_id').slice(),
  decode: (b) => ({ channelId: splitStruct(b, [32], 'ChannelReady')[0]! }),
};

const updateTlcInfo: Codec<UpdateTlcInfo> = {
  encode: (v) =>
    concatBytes(
      fixed(v.channelId, 32, 'channel_id'),
      u64(v.timestamp, 'timestamp'),
      uintLe(BigInt(v.channelFlags), 4, 'channel_flags'),
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
    encodeTable([
      fixed(v.channelId, 32, 'channel_id'),
      u64(v.tlcId, 'tlc_id'),
      u128(v.amount, 'amount'),
      fixed(v.paymentHash, 32, 'payment_hash'),
      u64(v.expiry, 'expiry'),
      new Uint8Array([v.hashAlgorithm & 0xff]),
      encodeFixvec(v.onionPacket),
    ]),
  decode: (b) => {
    const f = decodeTable(b, 7, 'AddTlc');
    return {
      channelId: decodeFixed(f[0]!, 32, 'channel_id').slice(),
      tlcId: rd64(f[1]!, 'tlc_id'),
      amount: rd128(f[2]!, 'amount'),
      paymentHash: decodeFixed(f[3]!, 32, 'payment_hash').slice(),
      expiry: rd64(f[4]!, 'expiry'),
      hashAlgorithm: decodeFixed(f[5]!, 1, 'hash_algorithm')[0] as number,
      onionPacket: decodeFixvec(f[6]!, 'onion_packet').slice(),
    };
  },
};

const removeTlc: Codec<RemoveTlc> = {
  encode: (v) => {
    const reason =
      'fulfill' in v.reason
        ? concatBytes(u32le(0), fixed(v.reason.fulfill, 32, 'payment_preimage'))
        : concatBytes(u32le(1), encodeTable([encodeFixvec(v.reason.fail)]));
    return encodeTable([fixed(v.channelId, 32, 'channel_id'), u64(v.tlcId, 'tlc_id'), reason]);
  },
  decode: (b) => {
    const f = decodeTable(b, 3, 'RemoveTlc');
    const r = f[2]!;
    if (r.length < 4) throw malformed('RemoveTlc.reason: shorter than its union header');
    const id = readU32le(r, 0);
    const body = r.subarray(4);
    let reason: RemoveTlcReason;
    if (id === 0) reason = { fulfill: decodeFixed(body, 32, 'payment_preimage').slice() };
    else if (id === 1)
      reason = { fail: decodeFixvec(decodeTable(body, 1, 'TlcErrPacket')[0]!, 'onion_packet').slice() };
    else throw malformed(`RemoveTlc.reason: unknown union item ${id}`);
    return {
      channelId: decodeFixed(f[0]!, 32, 'channel_id').slice(),
      tlcId: rd64(f[1]!, 'tlc_id'),
      reason,
    };
  },
};

const revokeAndAck: Codec<RevokeAndAck> = {
  encode: (v) =>
    concatBytes(
      fixed(v.channelId, 32, 'channel_id'),
      fixed(v.revocationPartialSignature, 32, 'partial_signature'),
      fixed(v.nextPerCommitmentPoint, 33, 'next_per_commitment_point'),
      fixed(v.nextRevocationNonce, 66, 'nonce'),
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
    encodeTable([fixed(v.channelId, 32, 'channel_id'), u64(v.feeRate, 'fee_rate'), encScript(v.closeScript)]),
  decode: (b) => {
    const f = decodeTable(b, 3, 'Shutdown');
    return {
      channelId: decodeFixed(f[0]!, 32, 'channel_id').slice(),
      feeRate: rd64(f[1]!, 'fee_rate'),
      closeScript: decScript(f[2]!, 'close_script'),
    };
  },
};

const closingSigned: Codec<ClosingSigned> = {
  encode: (v) =>
    concatBytes(fixed(v.channelId, 32, 'channel_id'), fixed(v.partialSignature, 32, 'partial_signature')),
  decode: (b) => {
    const [c, s] = splitStruct(b, [32, 32], 'ClosingSigned');
    return { channelId: c!, partialSignature: s! };
  },
};

const reestablish: Codec<ReestablishChannel> = {
  encode: (v) =>
    encodeTable([
      fixed(v.channelId, 32, 'channel_id'),
      u64(v.localCommitmentNumber, 'local_commitment_number'),
      u64(v.remoteCommitmentNumber, 'remote_commitment_number'),
    ]),
  decode: (b) => {
    const f = decodeTable(b, 3, 'ReestablishChannel');
    return {
      channelId: decodeFixed(f[0]!, 32, 'channel_id').slice(),
      localCommitmentNumber: rd64(f[1]!, 'local_commitment_number'),
      remoteCommitmentNumber: rd64(f[2]!, 'remote_commitment_number'),
    };
  },
};

const announcementSignatures: Codec<AnnouncementSignatures> = {
  encode: (v) =>
    encodeTable([
      fixed(v.channelId, 32, 'channel_id'),
      fixed(v.channelOutpoint, 36, 'channel_outpoint'),
      fixed(v.nodeSignature, 64, 'node_signature'),
      fixed(v.partialSignature, 32, 'partial_signature'),
    ]),
  decode: (b) => {
    const f = decodeTable(b, 4, 'AnnouncementSignatures');
    return {
      channelId: decodeFixed(f[0]!, 32, 'channel_id').slice(),
      channelOutpoint: decodeFixed(f[1]!, 36, 'channel_outpoint').slice(),
      nodeSignature: decodeFixed(f[2]!, 64, 'node_signature').slice(),
      partialSignature: decodeFixed(f[3]!, 32, 'partial_signature').slice(),
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
