/**
 * secio handshake messages (tentacle-secio `handshake.mol`): `Propose` and `Exchange`, and the
 * `PublicKey` union wrapping the 33-byte compressed secp256k1 key. Decoding is strict and throws
 * P2pError('Malformed'); tentacle calls that `HandshakeParsingFailure`.
 */
import { mol } from '../../codec/index.ts';
import { decodeOrMalformed } from '../errors.ts';

/** `union PublicKey { Secp256k1 }`: item id 0 ‖ the raw key as Bytes. */
const PublicKey = mol.map(
  mol.union('PublicKey', { Secp256k1: mol.bytes() }),
  (u) => u.value,
  (raw: Uint8Array) => ({ type: 'Secp256k1' as const, value: raw }),
);

const Propose = mol.table(
  'Propose',
  {
    rand: mol.bytes(),
    /** Raw secp256k1 key bytes from inside the PublicKey union (33 bytes when compressed). */
    pubkey: mol.map(
      mol.bytes(),
      (b) => PublicKey.decode(b),
      (k: Uint8Array) => PublicKey.encode(k),
    ),
    exchanges: mol.utf8(),
    ciphers: mol.utf8(),
    hashes: mol.utf8(),
  },
  { compatible: true },
);
export type Propose = mol.Infer<typeof Propose>;

const Exchange = mol.table(
  'Exchange',
  { epubkey: mol.bytes(), signature: mol.bytes() },
  { compatible: true },
);
export type Exchange = mol.Infer<typeof Exchange>;

export const encodePublicKey = (raw: Uint8Array): Uint8Array => PublicKey.encode(raw);
export const decodePublicKey = (buf: Uint8Array): Uint8Array =>
  decodeOrMalformed(() => PublicKey.decode(buf));
export const encodePropose = (p: Propose): Uint8Array => Propose.encode(p);
export const decodePropose = (buf: Uint8Array): Propose => decodeOrMalformed(() => Propose.decode(buf));
export const encodeExchange = (e: Exchange): Uint8Array => Exchange.encode(e);
export const decodeExchange = (buf: Uint8Array): Exchange => decodeOrMalformed(() => Exchange.decode(buf));
