/**
 * Molecule schemas of the channel messages of the reference's `fiber.mol` (FiberMessage union ids
 * 1–18, `docs/reference/fiber-channel-protocol.md` §1): one declaration per message gives its
 * encoder, its decoder and its type (`codec/schema.ts`). Tables are read in molecule's
 * "compatible" mode (extra trailing fields ignored), structs must have their exact size.
 * Every failure, encoding or decoding, is a P2pError('Malformed'), never another exception.
 */
import { ccc } from '@ckb-ccc/core';
import { MoleculeError, mol } from '../codec/index.ts';
import type { FiberMessage, FiberMessageKind } from '../p2p/index.ts';
import { malformed, P2pError } from '../p2p/index.ts';

export type Bytes = Uint8Array;

const Byte32 = mol.byteArray(32);
const Byte33 = mol.byteArray(33);
const Byte36 = mol.byteArray(36);
const Byte64 = mol.byteArray(64);
/** A MuSig2 public nonce. */
const Nonce = mol.byteArray(66, 'PubNonce');
const compatible = { compatible: true };

/** A CKB script: molecule's layout checked, then ccc's Script (which also checks the hash type). */
const Script = mol.foreign(
  'Script',
  (s: ccc.Script) => ccc.Script.from(s).toBytes(),
  (b) => ccc.Script.fromBytes(b),
  mol.table('Script', { codeHash: Byte32, hashType: mol.u8, args: mol.bytes() }, compatible),
);

/** A transaction; ccc reads leniently, so the bytes must re-encode to themselves. */
const Transaction = mol.foreign(
  'Transaction',
  (tx: ccc.Transaction) => tx.toBytes(),
  (b) => {
    const tx = ccc.Transaction.fromBytes(b);
    if (Buffer.compare(tx.toBytes(), b) !== 0)
      throw new MoleculeError('TxUpdate.tx: not a canonical Transaction');
    return tx;
  },
);

/** The keys and first nonces each side announces, in the same order in Open and Accept. */
const partyKeys = {
  fundingPubkey: Byte33,
  tlcBasepoint: Byte33,
  firstPerCommitmentPoint: Byte33,
  secondPerCommitmentPoint: Byte33,
  channelAnnouncementNonce: mol.option(Nonce),
  nextCommitmentNonce: Nonce,
  nextRevocationNonce: Nonce,
};

const OpenChannel = mol.table(
  'OpenChannel',
  {
    chainHash: Byte32,
    channelId: Byte32,
    fundingUdtTypeScript: mol.option(Script),
    fundingAmount: mol.u128,
    shutdownScript: Script,
    reservedCkbAmount: mol.u64,
    fundingFeeRate: mol.u64,
    commitmentFeeRate: mol.u64,
    maxTlcValueInFlight: mol.u128,
    maxTlcNumberInFlight: mol.u64,
    commitmentDelayEpoch: mol.u64,
    ...partyKeys,
    channelFlags: mol.u8,
  },
  compatible,
);

const AcceptChannel = mol.table(
  'AcceptChannel',
  {
    channelId: Byte32,
    fundingAmount: mol.u128,
    shutdownScript: Script,
    reservedCkbAmount: mol.u64,
    maxTlcValueInFlight: mol.u128,
    maxTlcNumberInFlight: mol.u64,
    ...partyKeys,
  },
  compatible,
);

const TxSignatures = mol.table(
  'TxSignatures',
  { channelId: Byte32, witnesses: mol.dynvec('BytesVec', mol.bytes()) },
  compatible,
);
const TxUpdate = mol.table('TxUpdate', { channelId: Byte32, tx: Transaction }, compatible);
const TxComplete = mol.struct('TxComplete', { channelId: Byte32, nextCommitmentNonce: Nonce });
const TxAbort = mol.table('TxAbort', { channelId: Byte32, message: mol.bytes() }, compatible);
const TxInitRBF = mol.table('TxInitRBF', { channelId: Byte32, feeRate: mol.u64 }, compatible);
const TxAckRBF = mol.table('TxAckRBF', { channelId: Byte32 }, compatible);
const CommitmentSigned = mol.struct('CommitmentSigned', {
  channelId: Byte32,
  fundingTxPartialSignature: Byte32,
  nextCommitmentNonce: Nonce,
});
const ChannelReady = mol.struct('ChannelReady', { channelId: Byte32 });
const UpdateTlcInfo = mol.struct('UpdateTlcInfo', {
  channelId: Byte32,
  timestamp: mol.u64,
  channelFlags: mol.u32,
  tlcExpiryDelta: mol.u64,
  tlcMinimumValue: mol.u128,
  tlcFeeProportionalMillionths: mol.u128,
});
const AddTlc = mol.table(
  'AddTlc',
  {
    channelId: Byte32,
    tlcId: mol.u64,
    amount: mol.u128,
    paymentHash: Byte32,
    /** Absolute unix time in ms. */
    expiry: mol.u64,
    /** 0 = CKB blake2b, 1 = sha256. */
    hashAlgorithm: mol.u8,
    onionPacket: mol.bytes(),
  },
  compatible,
);

export type RemoveTlcReason = { fulfill: Bytes } | { fail: Bytes };
const RemoveTlcReason: mol.Schema<RemoveTlcReason> = mol.map(
  mol.union('RemoveTlcReason', {
    RemoveTlcFulfill: Byte32,
    TlcErrPacket: mol.table('TlcErrPacket', { onionPacket: mol.bytes() }, compatible),
  }),
  (u) => (u.type === 'RemoveTlcFulfill' ? { fulfill: u.value } : { fail: u.value.onionPacket }),
  (r: RemoveTlcReason) =>
    'fulfill' in r
      ? { type: 'RemoveTlcFulfill' as const, value: r.fulfill }
      : { type: 'TlcErrPacket' as const, value: { onionPacket: r.fail } },
);
const RemoveTlc = mol.table(
  'RemoveTlc',
  { channelId: Byte32, tlcId: mol.u64, reason: RemoveTlcReason },
  compatible,
);
const RevokeAndAck = mol.struct('RevokeAndAck', {
  channelId: Byte32,
  revocationPartialSignature: Byte32,
  nextPerCommitmentPoint: Byte33,
  nextRevocationNonce: Nonce,
});
const Shutdown = mol.table(
  'Shutdown',
  { channelId: Byte32, feeRate: mol.u64, closeScript: Script },
  compatible,
);
const ClosingSigned = mol.struct('ClosingSigned', { channelId: Byte32, partialSignature: Byte32 });
const ReestablishChannel = mol.table(
  'ReestablishChannel',
  { channelId: Byte32, localCommitmentNumber: mol.u64, remoteCommitmentNumber: mol.u64 },
  compatible,
);
const AnnouncementSignatures = mol.table(
  'AnnouncementSignatures',
  { channelId: Byte32, channelOutpoint: Byte36, nodeSignature: Byte64, partialSignature: Byte32 },
  compatible,
);

export const CHANNEL_CODECS = {
  OpenChannel,
  AcceptChannel,
  TxSignatures,
  TxUpdate,
  TxComplete,
  TxAbort,
  TxInitRBF,
  TxAckRBF,
  CommitmentSigned,
  ChannelReady,
  UpdateTlcInfo,
  AddTlc,
  RemoveTlc,
  RevokeAndAck,
  Shutdown,
  ClosingSigned,
  ReestablishChannel,
  AnnouncementSignatures,
};

export type ChannelMessageBodies = {
  [K in keyof typeof CHANNEL_CODECS]: mol.Infer<(typeof CHANNEL_CODECS)[K]>;
};
export type OpenChannel = ChannelMessageBodies['OpenChannel'];
export type AcceptChannel = ChannelMessageBodies['AcceptChannel'];
export type TxSignatures = ChannelMessageBodies['TxSignatures'];
export type TxUpdate = ChannelMessageBodies['TxUpdate'];
export type TxComplete = ChannelMessageBodies['TxComplete'];
export type TxAbort = ChannelMessageBodies['TxAbort'];
export type TxInitRBF = ChannelMessageBodies['TxInitRBF'];
export type TxAckRBF = ChannelMessageBodies['TxAckRBF'];
export type CommitmentSigned = ChannelMessageBodies['CommitmentSigned'];
export type ChannelReady = ChannelMessageBodies['ChannelReady'];
export type UpdateTlcInfo = ChannelMessageBodies['UpdateTlcInfo'];
export type AddTlc = ChannelMessageBodies['AddTlc'];
export type RemoveTlc = ChannelMessageBodies['RemoveTlc'];
export type RevokeAndAck = ChannelMessageBodies['RevokeAndAck'];
export type Shutdown = ChannelMessageBodies['Shutdown'];
export type ClosingSigned = ChannelMessageBodies['ClosingSigned'];
export type ReestablishChannel = ChannelMessageBodies['ReestablishChannel'];
export type AnnouncementSignatures = ChannelMessageBodies['AnnouncementSignatures'];
export type ChannelMessageKind = keyof ChannelMessageBodies;
export type ChannelMessage = {
  [K in ChannelMessageKind]: { type: K; value: ChannelMessageBodies[K] };
}[ChannelMessageKind];

export function isChannelMessageKind(k: FiberMessageKind): k is ChannelMessageKind {
  return k in CHANNEL_CODECS;
}

/** Body bytes of a channel message (without the union id). */
export function encodeChannelBody(msg: ChannelMessage): Bytes {
  try {
    return (CHANNEL_CODECS[msg.type] as mol.Schema<unknown>).encode(msg.value);
  } catch (e) {
    if (e instanceof MoleculeError) throw new P2pError('Malformed', e.message);
    throw e;
  }
}

/** Decodes a channel message body; throws P2pError('Malformed') on any defect. */
export function decodeChannelBody<K extends ChannelMessageKind>(
  kind: K,
  body: Bytes,
): ChannelMessageBodies[K] {
  try {
    return (CHANNEL_CODECS[kind] as mol.Schema<ChannelMessageBodies[K]>).decode(body);
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
