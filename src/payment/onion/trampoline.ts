/**
 * The trampoline inner onion (`docs/reference/fiber-routing-protocol.md` §1.4, §5): 1,366-byte
 * packets (L = 1300), version 1 only, the payment hash as associated data, per-hop payloads of
 * the molecule union `TrampolineHopPayload` (Forward for each trampoline, Final for the target).
 * It travels as custom record 65537 of the outer final payload.
 */
import { randomBytes } from '@noble/hashes/utils.js';
import {
  type Bytes,
  byte,
  fixed,
  option,
  readOption,
  readTable,
  readU32le,
  readUintLe,
  readUnion,
  StrandError,
  table,
  uintLe,
  union,
} from '../../codec/index.ts';
import { decodeCustomRecords, encodeCustomRecords, type HashAlgorithm } from './hop-data.ts';
import { OnionError } from './packet.ts';
import { createPacket, deriveSharedSecrets, peelPacket } from './sphinx.ts';

export const TRAMPOLINE_ONION_DATA_LEN = 1300;
export const TRAMPOLINE_ONION_PACKET_SIZE = 1 + 33 + TRAMPOLINE_ONION_DATA_LEN + 32;
const VERSION = 1;

export interface TrampolineForwardPayload {
  type: 'Forward';
  nextNodeId: Bytes;
  amountToForward: bigint;
  hashAlgorithm: HashAlgorithm;
  buildMaxFeeAmount: bigint;
  tlcExpiryDelta: bigint;
  tlcExpiryLimit: bigint;
  maxParts: bigint | null;
}

export interface TrampolineFinalPayload {
  type: 'Final';
  finalAmount: bigint;
  finalTlcExpiryDelta: bigint;
  paymentPreimage: Bytes | null;
  customRecords: Map<number, Bytes> | null;
}

export type TrampolineHopPayload = TrampolineForwardPayload | TrampolineFinalPayload;

export function encodeTrampolinePayload(p: TrampolineHopPayload): Bytes {
  if (p.type === 'Forward') {
    return union(
      0,
      table([
        fixed(p.nextNodeId, 33, 'next_node_id'),
        uintLe(p.amountToForward, 16),
        Uint8Array.of(p.hashAlgorithm),
        uintLe(p.buildMaxFeeAmount, 16),
        uintLe(p.tlcExpiryDelta, 8),
        uintLe(p.tlcExpiryLimit, 8),
        option(p.maxParts === null ? null : uintLe(p.maxParts, 8)),
      ]),
    );
  }
  return union(
    1,
    table([
      uintLe(p.finalAmount, 16),
      uintLe(p.finalTlcExpiryDelta, 8),
      option(p.paymentPreimage ? fixed(p.paymentPreimage, 32, 'payment_preimage') : null),
      option(p.customRecords ? encodeCustomRecords(p.customRecords) : null),
    ]),
  );
}

export function decodeTrampolinePayload(b: Bytes): TrampolineHopPayload {
  const { id, body } = readUnion(b, 'TrampolineHopPayload', 2);
  if (id === 0) {
    const f = readTable(body, 'TrampolineForwardPayload', 7);
    const parts = readOption(f[6]!);
    return {
      type: 'Forward',
      nextNodeId: fixed(f[0]!, 33, 'next_node_id').slice(),
      amountToForward: readUintLe(f[1]!, 16, 'amount_to_forward'),
      hashAlgorithm: byte(f[2]!, 'hash_algorithm') === 1 ? 1 : 0,
      buildMaxFeeAmount: readUintLe(f[3]!, 16, 'build_max_fee_amount'),
      tlcExpiryDelta: readUintLe(f[4]!, 8, 'tlc_expiry_delta'),
      tlcExpiryLimit: readUintLe(f[5]!, 8, 'tlc_expiry_limit'),
      maxParts: parts === null ? null : readUintLe(parts, 8, 'max_parts'),
    };
  }
  const f = readTable(body, 'TrampolineFinalPayload', 4);
  const preimage = readOption(f[2]!);
  const records = readOption(f[3]!);
  return {
    type: 'Final',
    finalAmount: readUintLe(f[0]!, 16, 'final_amount'),
    finalTlcExpiryDelta: readUintLe(f[1]!, 8, 'final_tlc_expiry_delta'),
    paymentPreimage: preimage === null ? null : fixed(preimage, 32, 'payment_preimage').slice(),
    customRecords: records === null ? null : decodeCustomRecords(records),
  };
}

/** Hop length: the union id (4 bytes) plus the size of the table after it. */
function hopLength(d: Bytes): number | null {
  if (d.length < 8) return null;
  const n = readU32le(d, 4);
  return n >= 4 ? 4 + n : null;
}

/** Builds the inner onion for `path` (trampolines then the target), one payload per node. */
export function buildTrampolineOnion(
  path: Bytes[],
  payloads: TrampolineHopPayload[],
  paymentHash: Bytes,
  sessionKey: Bytes = randomBytes(32),
): { packet: Bytes; sharedSecrets: Bytes[] } {
  if (path.length === 0 || path.length !== payloads.length)
    throw new OnionError('trampoline path and payloads differ');
  try {
    const packet = createPacket({
      sessionKey,
      hopPubkeys: path,
      hopData: payloads.map(encodeTrampolinePayload),
      assocData: paymentHash,
      dataLen: TRAMPOLINE_ONION_DATA_LEN,
      version: VERSION,
    });
    return { packet, sharedSecrets: deriveSharedSecrets(sessionKey, path) };
  } catch (e) {
    if (e instanceof StrandError) throw new OnionError(e.message);
    throw e;
  }
}

export function peelTrampolineOnion(
  packet: Bytes,
  secretKey: Bytes,
  paymentHash: Bytes,
): { payload: TrampolineHopPayload; next: Bytes | null; sharedSecret: Bytes } {
  if (packet[0] !== VERSION) throw new OnionError(`Unknown onion packet version: ${packet[0]}`);
  try {
    const peeled = peelPacket(packet, secretKey, paymentHash, hopLength);
    return {
      payload: decodeTrampolinePayload(peeled.hopData),
      next: peeled.next,
      sharedSecret: peeled.sharedSecret,
    };
  } catch (e) {
    if (e instanceof StrandError) throw new OnionError(e.message);
    throw new OnionError(`trampoline onion: ${(e as Error).message}`);
  }
}
