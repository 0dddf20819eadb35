/**
 * secio handshake messages (tentacle-secio `handshake.mol`): `Propose` and `Exchange`, and the
 * `PublicKey` union wrapping the 33-byte compressed secp256k1 key. Decoding is strict and throws
 * P2pError('Malformed'); tentacle calls that `HandshakeParsingFailure`.
 */
import { malformed } from '../errors.ts';
import {
  concatBytes,
  decodeFixvec,
  decodeString,
  decodeTable,
  encodeFixvec,
  encodeString,
  encodeTable,
  readU32le,
  u32le,
} from '../mol.ts';

export interface Propose {
  rand: Uint8Array;
  /** Raw secp256k1 key bytes from inside the PublicKey union (33 bytes when compressed). */
  pubkey: Uint8Array;
  exchanges: string;
  ciphers: string;
  hashes: string;
}

export interface Exchange {
  epubkey: Uint8Array;
  signature: Uint8Array;
}

/** `union PublicKey { Secp256k1 }`: item id 0 ‖ fixvec. */
export function encodePublicKey(raw: Uint8Array): Uint8Array {
  return concatBytes(u32le(0), encodeFixvec(raw));
}

export function decodePublicKey(buf: Uint8Array): Uint8Array {
  if (buf.length < 4) throw malformed('PublicKey: too short');
  const id = readU32le(buf, 0);
  if (id !== 0) throw malformed(`PublicKey: unknown union item ${id}`);
  return decodeFixvec(buf.subarray(4), 'PublicKey.Secp256k1');
}

export function encodePropose(p: Propose): Uint8Array {
  return encodeTable([
    encodeFixvec(p.rand),
    encodeFixvec(encodePublicKey(p.pubkey)),
    encodeString(p.exchanges),
    encodeString(p.ciphers),
    encodeString(p.hashes),
  ]);
}

export function decodePropose(buf: Uint8Array): Propose {
  const f = decodeTable(buf, 5, 'Propose');
  return {
    rand: decodeFixvec(f[0]!, 'Propose.rand').slice(),
    pubkey: decodePublicKey(decodeFixvec(f[1]!, 'Propose.pubkey')).slice(),
    exchanges: decodeString(f[2]!, 'Propose.exchanges'),
    ciphers: decodeString(f[3]!, 'Propose.ciphers'),
    hashes: decodeString(f[4]!, 'Propose.hashes'),
  };
}

export function encodeExchange(e: Exchange): Uint8Array {
  return encodeTable([encodeFixvec(e.epubkey), encodeFixvec(e.signature)]);
}

export function decodeExchange(buf: Uint8Array): Exchange {
  const f = decodeTable(buf, 2, 'Exchange');
  return {
    epubkey: decodeFixvec(f[0]!, 'Exchange.epubkey').slice(),
    signature: decodeFixvec(f[1]!, 'Exchange.signature').slice(),
  };
}
