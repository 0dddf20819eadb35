/**
 * The molecule `FiberMessage` union of the reference's `fiber.mol` (wire id = position in the
 * union, 0-based) carried on protocol `/p2p/42`.
 *
 * Adding a message kind is one entry: a line in `FiberMessageBodies` and its codec in `CODECS`
 * (any `{encode, decode}`, e.g. a `mol.table(...)` from @ckb-ccc/core). Kinds without a codec yet
 * still decode, as `{type, raw}`, so a handler can be plugged in before its codec exists.
 */
import { bytesToHex, concat, MoleculeError, mol, readU32le, u32le } from '../codec/index.ts';
import { decodeOrMalformed, malformed, P2pError } from './errors.ts';

export const FIBER_MESSAGE_KINDS = [
  'Init',
  'OpenChannel',
  'AcceptChannel',
  'TxSignatures',
  'TxUpdate',
  'TxComplete',
  'TxAbort',
  'TxInitRBF',
  'TxAckRBF',
  'CommitmentSigned',
  'ChannelReady',
  'UpdateTlcInfo',
  'AddTlc',
  'RemoveTlc',
  'RevokeAndAck',
  'Shutdown',
  'ClosingSigned',
  'ReestablishChannel',
  'AnnouncementSignatures',
] as const;
export type FiberMessageKind = (typeof FIBER_MESSAGE_KINDS)[number];

export interface MessageCodec<T> {
  encode(value: T): Uint8Array;
  /** Throws on malformed input; the caller turns that into a typed error. */
  decode(bytes: Uint8Array): T;
}

/** `table Init { features: Bytes, chain_hash: Byte32 }` */
const Init = mol.table(
  'Init',
  {
    /** Feature bit vector, bit n = byte n/8, bit n%8 (little-endian bit order). */
    features: mol.bytes(),
    chainHash: mol.byteArray(32),
  },
  { compatible: true },
);
export type Init = mol.Infer<typeof Init>;

/** Decoded bodies of the kinds that have a codec. One line per kind. */
export interface FiberMessageBodies {
  Init: Init;
}

const CODECS: { [K in keyof FiberMessageBodies]: MessageCodec<FiberMessageBodies[K]> } = {
  Init,
};

type Known = keyof FiberMessageBodies;
export type FiberMessage =
  | { [K in Known]: { type: K; value: FiberMessageBodies[K] } }[Known]
  | { [K in Exclude<FiberMessageKind, Known>]: { type: K; raw: Uint8Array } }[Exclude<
      FiberMessageKind,
      Known
    >];

export function encodeFiberMessage(msg: FiberMessage): Uint8Array {
  const id = FIBER_MESSAGE_KINDS.indexOf(msg.type);
  if (id < 0) throw new P2pError('Malformed', `unknown FiberMessage kind ${String(msg.type)}`);
  const body =
    'raw' in msg
      ? msg.raw
      : decodeOrMalformed(() =>
          (CODECS[msg.type as Known] as MessageCodec<unknown>).encode((msg as { value: unknown }).value),
        );
  return concat(u32le(id), body);
}

/** Decodes one message; every failure is a P2pError('Malformed'), never another exception. */
export function decodeFiberMessage(bytes: Uint8Array): FiberMessage {
  if (bytes.length < 4) throw malformed('FiberMessage: shorter than its union header');
  const id = readU32le(bytes, 0);
  const type = FIBER_MESSAGE_KINDS[id];
  if (type === undefined) throw malformed(`FiberMessage: unknown union item ${id}`);
  const body = bytes.subarray(4);
  const codec = (CODECS as Partial<Record<FiberMessageKind, MessageCodec<unknown>>>)[type];
  if (!codec) return { type, raw: body.slice() } as FiberMessage;
  try {
    return { type, value: codec.decode(body) } as FiberMessage;
  } catch (e) {
    if (e instanceof P2pError) throw e;
    if (e instanceof MoleculeError) throw malformed(e.message);
    throw malformed(`FiberMessage.${type}: ${(e as Error).message}`);
  }
}

/** The reference's default features: GOSSIP_QUERIES, BASIC_MPP, TRAMPOLINE_ROUTING required. */
export const DEFAULT_FEATURES = new Uint8Array([0b0001_0101]);

/**
 * Strand's channel rules (the seed's reserve; single-use MuSig2 nonces), an optional (odd) bit far
 * above the reference's: a peer that sets it gets them, any other peer (fnn) gets fnn's. The
 * reference ignores optional bits it does not know (it checks only our required ones).
 */
export const STRAND_CHANNEL_RULES_BIT = 255;

/**
 * Strand's pipelined TLC updates (`channel/pipelined.ts`, Lightning's update rules), optional:
 * set by a node configured to offer them (`fiber.pipelined_updates`); a channel runs them when
 * both of its nodes set it.
 */
export const STRAND_PIPELINED_BIT = 253;

/** What Strand sends in `Init`: the reference's defaults and Strand's channel rules. */
export const INIT_FEATURES = withBit(DEFAULT_FEATURES, STRAND_CHANNEL_RULES_BIT);

/** `INIT_FEATURES`, with the pipelined-updates bit when the node offers them. */
export function initFeatures(pipelined: boolean): Uint8Array {
  return pipelined ? withBit(INIT_FEATURES, STRAND_PIPELINED_BIT) : INIT_FEATURES;
}

export function hasFeatureBit(features: Uint8Array, bit: number): boolean {
  return (((features[bit >> 3] ?? 0) >> (bit & 7)) & 1) === 1;
}

function withBit(features: Uint8Array, bit: number): Uint8Array {
  const out = new Uint8Array(Math.max(features.length, (bit >> 3) + 1));
  out.set(features);
  out[bit >> 3]! |= 1 << (bit & 7);
  return out;
}

const FEATURE_NAMES = ['GOSSIP_QUERIES', 'BASIC_MPP', 'TRAMPOLINE_ROUTING'];

/** Names of the set feature bits (`GOSSIP_QUERIES_REQUIRED`, …), for node_info and logs. */
export function featureNames(features: Uint8Array): string[] {
  const out: string[] = [];
  for (let bit = 0; bit < features.length * 8; bit++) {
    if (((features[bit >> 3]! >> (bit & 7)) & 1) === 0) continue;
    const base = FEATURE_NAMES[bit >> 1];
    if (bit === STRAND_CHANNEL_RULES_BIT) out.push('STRAND_CHANNEL_RULES_OPTIONAL');
    else if (bit === STRAND_PIPELINED_BIT) out.push('STRAND_PIPELINED_UPDATES_OPTIONAL');
    else out.push(base ? `${base}_${bit & 1 ? 'OPTIONAL' : 'REQUIRED'}` : `UNKNOWN_${bit}`);
  }
  return out;
}

/** `Hash256(0x…)`, the reference's display form of hashes in error texts. */
export function hash256Text(h: Uint8Array): string {
  return `Hash256(${bytesToHex(h)})`;
}
