/**
 * secio handshake messages (tentacle-secio `handshake.mol`): `Propose` and `Exchange`, and the
 * `PublicKey` union wrapping the 33-byte compressed secp256k1 key. Decoding is strict and throws
 * P2pError('Malformed'); tentacle calls that `HandshakeParsingFailure`.
 */
import {
  concat,
  fixvec,
  readCompatibleTable,
  readFixvec,
  readU32le,
  readUtf8String,
  table,
  u32le,
  utf8String,
} from '../../codec/index.ts';
import { decodeOrMalformed, malformed } from '../errors.ts';

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
  return concat(u32le(0), fixvec(raw));
}

export function decodePublicKey(buf: Uint8Array): Uint8Array {
  if (buf.length < 4) throw malformed('PublicKey: too short');
  const id = readU32le(buf, 0);
  if (id !== 0) throw malformed(`PublicKey: unknown union item ${id}`);
  return decodeOrMalformed(() => readFixvec(buf.subarray(4), 'PublicKey.Secp256k1'));
}

export function encodePropose(p: Propose): Uint8Array {
  return table([
    fixvec(p.rand),
    fixvec(encodePublicKey(p.pubkey)),
    utf8String(p.exchanges),
    utf8String(p.ciphers),
    utf8String(p.hashes),
  ]);
}

export function decodePropose(buf: Uint8Array): Propose {
  return decodeOrMalformed(() => {
    const f = readCompatibleTable(buf, 'Propose', 5);
    return {
      rand: readFixvec(f[0]!, 'Propose.rand').slice(),
      pubkey: decodePublicKey(readFixvec(f[1]!, 'Propose.pubkey')).slice(),
      exchanges: readUtf8String(f[2]!, 'Propose.exchanges'),
      ciphers: readUtf8String(f[3]!, 'Propose.ciphers'),
      hashes: readUtf8String(f[4]!, 'Propose.hashes'),
    };
  });
}

export function encodeExchange(e: Exchange): Uint8Array {
  return table([fixvec(e.epubkey), fixvec(e.signature)]);
}

export function decodeExchange(buf: Uint8Array): Exchange {
  return decodeOrMalformed(() => {
    const f = readCompatibleTable(buf, 'Exchange', 2);
    return {
      epubkey: readFixvec(f[0]!, 'Exchange.epubkey').slice(),
      signature: readFixvec(f[1]!, 'Exchange.signature').slice(),
    };
  });
}
