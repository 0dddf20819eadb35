/**
 * Nonces made ahead (`work-ahead.ts`): made only once the output has left, handed out once each,
 * for the key they were made for, and made on the spot when none is ready.
 */
import { describe, expect, it } from 'vitest';
import { type NoncePair, newNonce } from '../../src/channel/musig.ts';
import { NONCES_AHEAD, WorkAhead } from '../../src/channel/work-ahead.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { curve } from '../../src/crypto/index.ts';

const secretA = new Uint8Array(32).fill(1);
const secretB = new Uint8Array(32).fill(2);
const pubA = curve().mulG(secretA);
const pubB = curve().mulG(secretB);
const turn = () => new Promise<void>((r) => setImmediate(r));

function harness() {
  const made: NoncePair[] = [];
  const released: (() => void)[] = [];
  const ahead = new WorkAhead(
    (fn) => released.push(fn),
    (pub, sec) => {
      const n = newNonce(pub, sec);
      made.push(n);
      return n;
    },
  );
  /** The output left: what waited for it runs, and the pieces it schedules. */
  const release = async () => {
    for (const fn of released.splice(0)) fn();
    for (let i = 0; i < 10; i++) await turn();
  };
  return { ahead, made, release };
}

const hex = (n: NoncePair) => bytesToHex(n.secret);

describe('nonces made ahead', () => {
  it('are made only after the output has left, then handed out once each', async () => {
    const { ahead, made, release } = harness();
    const first = ahead.nonce(pubA, secretA);
    expect(made).toHaveLength(1); // none ready: made on the spot
    expect(ahead.ready(pubA)).toBe(0);
    await turn();
    expect(ahead.ready(pubA)).toBe(0); // nothing before the output is out
    await release();
    expect(ahead.ready(pubA)).toBe(NONCES_AHEAD);
    const given = [first, ahead.nonce(pubA, secretA), ahead.nonce(pubA, secretA)];
    expect(made).toHaveLength(1 + NONCES_AHEAD); // the two taken were made ahead
    expect(new Set(given.map(hex)).size).toBe(3);
    // Once more: the pool fills again, with nonces never given before.
    await release();
    const again = [ahead.nonce(pubA, secretA), ahead.nonce(pubA, secretA), ahead.nonce(pubA, secretA)];
    expect(new Set([...given, ...again].map(hex)).size).toBe(6);
  });

  it('keep a pool per funding key: a nonce serves the key it was made for', async () => {
    const { ahead, release } = harness();
    ahead.nonce(pubA, secretA);
    ahead.nonce(pubB, secretB);
    await release();
    for (const [pub, sec] of [
      [pubA, secretA],
      [pubB, secretB],
    ] as const) {
      const n = ahead.nonce(pub, sec);
      // BIP-327's secret nonce ends with the signer's public key.
      expect(bytesToHex(n.secret.subarray(64))).toBe(bytesToHex(pub));
    }
  });

  it('are not made after stop', async () => {
    const { ahead, made, release } = harness();
    ahead.nonce(pubA, secretA);
    ahead.stop();
    await release();
    expect(made).toHaveLength(1);
    expect(ahead.ready(pubA)).toBe(0);
  });
});
