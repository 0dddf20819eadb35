import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import * as scure from '@scure/btc-signer/musig2.js';
import { describe, expect, it } from 'vitest';
import {
  aggregatePartials,
  decodeSecretNonce,
  deterministicSign,
  keyAggContext,
  nonceGen,
  partialSign,
  partialVerify,
  sessionValues,
} from '../../src/crypto/musig2-fast.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function party() {
  const sk = secp256k1.utils.randomSecretKey();
  return { sk, pk: secp256k1.getPublicKey(sk, true) };
}

describe('musig2-fast against @scure/btc-signer', () => {
  it('aggregates keys to the same x-only key, in either order and with equal keys', () => {
    for (let i = 0; i < 8; i++) {
      const a = party();
      const b = party();
      for (const keys of [
        [a.pk, b.pk],
        [b.pk, a.pk],
        [a.pk, a.pk],
        [a.pk, b.pk, a.pk],
      ]) {
        expect(hex(keyAggContext(keys).xonly)).toBe(hex(scure.keyAggExport(scure.keyAggregate(keys))));
      }
    }
  });

  it('deterministic signing gives the same nonce and partial signature, byte for byte', () => {
    for (let i = 0; i < 12; i++) {
      const a = party();
      const b = party();
      const keys = i % 2 ? [a.pk, b.pk] : [b.pk, a.pk];
      const msg = secp256k1.utils.randomSecretKey().subarray(0, i % 3 === 0 ? 0 : 32);
      const bNonce = scure.nonceGen(b.pk, b.sk).public;
      const ours = deterministicSign(a.sk, bNonce, keys, msg);
      const theirs = scure.deterministicSign(a.sk, bNonce, keys, msg);
      expect(hex(ours.nonce)).toBe(hex(theirs.publicNonce));
      expect(hex(ours.partial)).toBe(hex(theirs.partialSig));
    }
  });

  it('a completed signature equals scure`s and verifies under BIP-340; bad partials are refused', () => {
    for (let i = 0; i < 12; i++) {
      const a = party();
      const b = party();
      const keys = [a.pk, b.pk].sort((x, y) => Buffer.compare(x, y));
      const msg = new Uint8Array(32).fill(i);
      const bNonce = scure.nonceGen(b.pk, b.sk);
      const first = deterministicSign(a.sk, bNonce.public, keys, msg);
      const ctx = keyAggContext(keys);
      const nonces = keys.map((k) => (hex(k) === hex(a.pk) ? first.nonce : bNonce.public));
      const s = sessionValues(ctx, nonces, msg);
      expect(partialVerify(s, first.partial, first.nonce, a.pk)).toBe(true);
      const { k1, k2 } = decodeSecretNonce(bNonce.secret);
      const mine = partialSign(s, k1, k2, b.sk);
      expect(partialVerify(s, mine, bNonce.public, b.pk)).toBe(true);
      const sig = aggregatePartials(s, [first.partial, mine]);
      expect(schnorr.verify(sig, msg, ctx.xonly)).toBe(true);

      const session = new scure.Session(scure.nonceAggregate(nonces), keys, msg);
      const scureMine = session.sign(bNonce.secret.slice(), b.sk);
      expect(hex(mine)).toBe(hex(scureMine));
      const ordered = keys.map((k) => (hex(k) === hex(a.pk) ? first.partial : scureMine));
      expect(hex(sig)).toBe(hex(session.partialSigAgg(ordered)));

      const bad = first.partial.slice();
      bad[31] = (bad[31]! + 1) & 0xff;
      expect(partialVerify(s, bad, first.nonce, a.pk)).toBe(false);
      expect(partialVerify(s, first.partial, bNonce.public, a.pk)).toBe(false);
    }
  });

  it('nonceGen gives fresh BIP-327 nonces: k·G as public, usable in scure`s session, never repeated', () => {
    const a = party();
    const b = party();
    const keys = [a.pk, b.pk];
    const msg = new Uint8Array(32).fill(9);
    const seen = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const n = nonceGen(b.pk, b.sk);
      expect(n.secret.length).toBe(97);
      expect(hex(n.secret.subarray(64))).toBe(hex(b.pk));
      const { k1, k2 } = decodeSecretNonce(n.secret);
      expect(hex(n.public)).toBe(
        hex(
          Buffer.concat([
            secp256k1.Point.BASE.multiply(k1).toBytes(true),
            secp256k1.Point.BASE.multiply(k2).toBytes(true),
          ]),
        ),
      );
      seen.add(hex(n.public));
      const aNonce = scure.nonceGen(a.pk, a.sk).public;
      const session = new scure.Session(scure.nonceAggregate([aNonce, n.public]), keys, msg);
      const partial = session.sign(n.secret.slice(), b.sk);
      expect(session.partialSigVerify(partial, [aNonce, n.public], 1)).toBe(true);
    }
    expect(seen.size).toBe(8);
  });

  it('refuses a signer whose key is not in the list', () => {
    const a = party();
    const b = party();
    const c = party();
    const bNonce = scure.nonceGen(b.pk, b.sk).public;
    expect(() => deterministicSign(c.sk, bNonce, [a.pk, b.pk], new Uint8Array(32))).toThrow(/not in the/);
  });
});
