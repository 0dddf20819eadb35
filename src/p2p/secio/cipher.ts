/**
 * secio frame encryption: AEAD (ChaCha20-Poly1305 or AES-GCM) with empty associated data, the
 * 16-byte tag appended, and a 12-byte little-endian counter nonce incremented *before* each use
 * (the first frame in each direction uses 01 00 … 00). Uses node:crypto (OpenSSL), which is what
 * the reference's native build uses too, and is far faster than a pure-JS AEAD.
 */
import crypto from 'node:crypto';
import { P2pError } from '../errors.ts';
import type { CipherAlg } from './algorithms.ts';

const NODE_NAME: Record<CipherAlg, crypto.CipherGCMTypes | 'chacha20-poly1305'> = {
  CHACHA20_POLY1305: 'chacha20-poly1305',
  'AES-128-GCM': 'aes-128-gcm',
  'AES-256-GCM': 'aes-256-gcm',
};

export const TAG_LEN = 16;

export class FrameCipher {
  private readonly nonce = new Uint8Array(12);
  private readonly name: string;

  constructor(
    alg: CipherAlg,
    private readonly key: Uint8Array,
  ) {
    this.name = NODE_NAME[alg];
  }

  private nextNonce(): Uint8Array {
    for (let i = 0; i < 12; i++) {
      this.nonce[i] = (this.nonce[i]! + 1) & 0xff;
      if (this.nonce[i] !== 0) break;
    }
    return this.nonce;
  }

  /** Plaintext → ciphertext ‖ tag (without the length prefix). */
  seal(plaintext: Uint8Array): Uint8Array {
    const c = crypto.createCipheriv(this.name as 'chacha20-poly1305', this.key, this.nextNonce(), {
      authTagLength: TAG_LEN,
    });
    const body = c.update(plaintext);
    c.final();
    const out = new Uint8Array(body.length + TAG_LEN);
    out.set(body, 0);
    out.set(c.getAuthTag(), body.length);
    return out;
  }

  /** Ciphertext ‖ tag → plaintext; throws P2pError('CryptoError') on a bad tag or short frame. */
  open(frame: Uint8Array): Uint8Array {
    if (frame.length < TAG_LEN)
      throw new P2pError('CryptoError', `secio: frame of ${frame.length} bytes is too short`);
    const nonce = this.nextNonce();
    const d = crypto.createDecipheriv(this.name as 'chacha20-poly1305', this.key, nonce, {
      authTagLength: TAG_LEN,
    });
    d.setAuthTag(frame.subarray(frame.length - TAG_LEN));
    const body = d.update(frame.subarray(0, frame.length - TAG_LEN));
    try {
      d.final();
    } catch {
      throw new P2pError('CryptoError', 'secio: frame authentication failed');
    }
    return new Uint8Array(body.buffer, body.byteOffset, body.length);
  }
}
