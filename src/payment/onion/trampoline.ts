/**
 * The trampoline inner onion (`docs/reference/fiber-routing-protocol.md` §1.4, §5): 1,366-byte
 * packets (L = 1300), version 1 only, the payment hash as associated data, per-hop payloads of
 * the molecule union `TrampolineHopPayload` (Forward for each trampoline, Final for the target).
 * It travels as custom record 65537 of the outer final payload.
 */
import { randomBytes } from '@noble/hashes/utils.js';
import { type Bytes, mol, readU32le, StrandError } from '../../codec/index.ts';
import { CustomRecords, HashAlgorithmByte } from './hop-data.ts';
import { OnionError } from './packet.ts';
import { peelPacket, sealPacket } from './sphinx.ts';

export const TRAMPOLINE_ONION_DATA_LEN = 1300;
export const TRAMPOLINE_ONION_PACKET_SIZE = 1 + 33 + TRAMPOLINE_ONION_DATA_LEN + 32;
const VERSION = 1;

const TrampolineHopPayload = mol.flatUnion('TrampolineHopPayload', {
  Forward: mol.table('TrampolineForwardPayload', {
    nextNodeId: mol.byteArray(33),
    amountToForward: mol.u128,
    hashAlgorithm: HashAlgorithmByte,
    buildMaxFeeAmount: mol.u128,
    tlcExpiryDelta: mol.u64,
    tlcExpiryLimit: mol.u64,
    maxParts: mol.option(mol.u64),
  }),
  Final: mol.table('TrampolineFinalPayload', {
    finalAmount: mol.u128,
    finalTlcExpiryDelta: mol.u64,
    paymentPreimage: mol.option(mol.byteArray(32)),
    customRecords: mol.option(CustomRecords),
  }),
});
export type TrampolineHopPayload = mol.Infer<typeof TrampolineHopPayload>;
export type TrampolineForwardPayload = Extract<TrampolineHopPayload, { type: 'Forward' }>;
export type TrampolineFinalPayload = Extract<TrampolineHopPayload, { type: 'Final' }>;

export const encodeTrampolinePayload = (p: TrampolineHopPayload): Bytes => TrampolineHopPayload.encode(p);
export const decodeTrampolinePayload = (b: Bytes): TrampolineHopPayload => TrampolineHopPayload.decode(b);

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
    return sealPacket({
      sessionKey,
      hopPubkeys: path,
      hopData: payloads.map(encodeTrampolinePayload),
      assocData: paymentHash,
      dataLen: TRAMPOLINE_ONION_DATA_LEN,
      version: VERSION,
    });
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
