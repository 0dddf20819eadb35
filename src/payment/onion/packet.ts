/**
 * Fiber's payment onion on top of Sphinx (`docs/reference/fiber-routing-protocol.md` §1.4,
 * §1.6): 6,566-byte packets (L = 6500), version 1 on send (versions 0 and 1 accepted), the
 * payment hash as associated data, and `TlcErrPacket` error packets — obfuscated per hop, or
 * plaintext behind 32 zero bytes when the erring node has no shared secret.
 */
import { randomBytes } from '@noble/hashes/utils.js';
import { type Bytes, concat, equalBytes, readU32le, StrandError } from '../../codec/index.ts';
import { decodeHopData, encodeHopData, type PaymentHopData } from './hop-data.ts';
import type { FirstLayer } from './session-key-pool.ts';
import {
  obfuscateErrorPacket,
  parseErrorPacket,
  peelPacket,
  SphinxError,
  sealPacket,
  createErrorPacket as sphinxCreateError,
} from './sphinx.ts';
import { decodeTlcErr, encodeTlcErr, type TlcErr, tryDecodeTlcErr } from './tlc-error.ts';

export const PAYMENT_ONION_DATA_LEN = 6500;
export const PAYMENT_ONION_PACKET_SIZE = 1 + 33 + PAYMENT_ONION_DATA_LEN + 32;
export const PAYMENT_ONION_VERSION = 1;
/** Sender-side passes over an error packet, so the erring hop cannot learn its position by timing. */
const ERROR_DECODING_PASSES = 27;
const NO_SHARED_SECRET = new Uint8Array(32);

/** A peel that fails for any reason: the hop answers InvalidOnionPayload, in plaintext. */
export class OnionError extends StrandError {
  readonly code = 'InvalidOnionPayload' as const;
}

/** v1: the molecule table's own size; v0: an 8-byte big-endian length prefix. */
function hopLength(version: number) {
  return (d: Bytes): number | null => {
    if (version === 1) {
      if (d.length < 4) return null;
      const n = readU32le(d, 0);
      return n >= 4 ? n : null;
    }
    if (d.length < 8) return null;
    let n = 0n;
    for (let i = 0; i < 8; i++) n = (n << 8n) | BigInt(d[i]!);
    return n > 0xffff_ffffn ? null : 8 + Number(n);
  };
}

function frameHopData(version: number, hop: PaymentHopData): Bytes {
  const mol = encodeHopData(hop);
  if (version === 1) return mol;
  const prefix = new Uint8Array(8);
  new DataView(prefix.buffer).setBigUint64(0, BigInt(mol.length), false);
  return concat(prefix, mol);
}

export interface BuiltOnion {
  /** The 6,566-byte packet to put in the first AddTlc. */
  packet: Bytes;
  /** The route's node public keys, first receiving node first. */
  path: Bytes[];
  /** One per path node: what `decodeErrorPacket` needs (keep it with the attempt). */
  sharedSecrets: Bytes[];
  sessionKey: Bytes;
}

export interface BuildOnionOptions {
  /** 32 random bytes unless given (tests). */
  sessionKey?: Bytes;
  /**
   * A session key whose first layer was made ahead for the path's first node
   * (`session-key-pool.ts`): its e·G and e·P are used, not computed again. Wins over `sessionKey`;
   * made for another first node, it is not used.
   */
  firstLayer?: FirstLayer;
  version?: 0 | 1;
  /** Packet data length; 6500 for payments. */
  dataLen?: number;
}

/**
 * Builds the onion for `hops` as the reference does: `hops[0]` is the sender's own instruction
 * (not encrypted: it becomes the first AddTlc), the path is each `hops[i].nextHop` while present,
 * and node `k` of the path receives `hops[k + 1]`.
 */
export function buildOnion(
  hops: PaymentHopData[],
  paymentHash: Bytes,
  opts: BuildOnionOptions = {},
): BuiltOnion {
  const path: Bytes[] = [];
  for (const h of hops) {
    if (!h.nextHop) break;
    path.push(h.nextHop);
  }
  const payloads = hops.slice(1);
  if (path.length === 0 || payloads.length !== path.length) {
    throw new OnionError('onion needs at least one hop, and a next hop for every payload but the last');
  }
  const version = opts.version ?? PAYMENT_ONION_VERSION;
  const first =
    opts.firstLayer && equalBytes(opts.firstLayer.firstHop, path[0]!) ? opts.firstLayer : undefined;
  const sessionKey = first?.sessionKey ?? opts.sessionKey ?? randomBytes(32);
  try {
    const { packet, sharedSecrets } = sealPacket({
      sessionKey,
      ...(first ? { firstLayer: first } : {}),
      hopPubkeys: path,
      hopData: payloads.map((h) => frameHopData(version, h)),
      assocData: paymentHash,
      dataLen: opts.dataLen ?? PAYMENT_ONION_DATA_LEN,
      version,
    });
    return { packet, path, sharedSecrets, sessionKey };
  } catch (e) {
    if (e instanceof SphinxError) throw new OnionError(e.message);
    throw e;
  }
}

export interface PeeledOnion {
  /** The instruction for this node's outgoing TLC (or, at the end, what it must receive). */
  current: PaymentHopData;
  /** The packet to forward, or null when this node is the final hop. */
  next: Bytes | null;
  /** Keep with the incoming TLC: errors going back are encrypted with it. */
  sharedSecret: Bytes;
}

/** Peels one layer with this node's secret key; any failure is an OnionError. */
export function peelOnion(
  packet: Bytes,
  secretKey: Bytes,
  paymentHash: Bytes,
  /** k·α for the packet's α and `secretKey`, made ahead (`ecdh-ahead.ts`). */
  ecdhPoint?: Bytes,
): PeeledOnion {
  const version = packet[0];
  if (version !== 0 && version !== 1) throw new OnionError(`Unknown onion packet version: ${version}`);
  try {
    const peeled = peelPacket(packet, secretKey, paymentHash, hopLength(version), ecdhPoint);
    const raw = version === 1 ? peeled.hopData : peeled.hopData.subarray(8);
    return { current: decodeHopData(raw), next: peeled.next, sharedSecret: peeled.sharedSecret };
  } catch (e) {
    if (e instanceof StrandError) throw new OnionError(e.message);
    throw new OnionError(`onion packet: ${(e as Error).message}`);
  }
}

// ---- error packets ----

/**
 * The erring node's error packet: encrypted with the shared secret of the incoming TLC, or
 * plaintext (`0^32 ‖ TlcErr`) when there is none (its own payment, or the peel itself failed).
 */
export function createErrorPacket(error: TlcErr, sharedSecret: Bytes | null): Bytes {
  const payload = encodeTlcErr(error);
  if (!sharedSecret || sharedSecret.every((b) => b === 0)) return concat(NO_SHARED_SECRET, payload);
  return sphinxCreateError(sharedSecret, payload);
}

export function isPlaintextErrorPacket(packet: Bytes): boolean {
  return packet.length >= 32 && packet.subarray(0, 32).every((b) => b === 0);
}

/** What a forwarding node does to an error coming back: one more layer, plaintext unchanged. */
export function relayErrorPacket(packet: Bytes, sharedSecret: Bytes): Bytes {
  return isPlaintextErrorPacket(packet) ? packet : obfuscateErrorPacket(sharedSecret, packet);
}

export interface DecodedError {
  error: TlcErr;
  /** Index in the path of the node whose layer verified; null for a plaintext packet. */
  hopIndex: number | null;
}

/**
 * The sender reads an error packet with the shared secrets of its attempt; null when nothing
 * verifies (the payment layer treats that as InvalidOnionError).
 */
export function decodeErrorPacket(packet: Bytes, sharedSecrets: Bytes[]): DecodedError | null {
  if (isPlaintextErrorPacket(packet)) {
    const plain = tryDecodeTlcErr(packet.subarray(32));
    if (plain) return { error: plain, hopIndex: null };
  }
  const found = parseErrorPacket(sharedSecrets, packet, tryDecodeTlcErr);
  if (!found) return null;
  // Dummy passes to the fixed count (no effect on the result).
  let dummy = packet;
  for (let i = found.index; i < ERROR_DECODING_PASSES; i++) {
    dummy = obfuscateErrorPacket(NO_SHARED_SECRET, dummy);
  }
  return { error: found.value, hopIndex: found.index };
}

export { decodeTlcErr, encodeTlcErr };
