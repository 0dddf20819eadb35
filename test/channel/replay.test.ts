/**
 * The channel core is deterministic: its clock and its nonces are inputs (`MachineEnv.now`,
 * `MachineEnv.nonce`). The same story (open, fund, a TLC added and fulfilled each way, a
 * cooperative close) run twice with the same seeded nonce source sends the same messages, byte for
 * byte, and ends in the same states — under Strand's nonce rules and under fnn's. Without a source
 * the machine draws fresh random nonces, so two runs differ (the secure default).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Channel } from '../../src/channel/state.ts';
import { serializeChannel } from '../../src/channel/state.ts';
import type { MachineEnv } from '../../src/channel/step.ts';
import { CKB } from '../../src/channel/tx.ts';
import { encodeChannelBody } from '../../src/channel/wire.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { nobleCurve } from '../../src/crypto/curve.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { openTestChain, type TestChain } from '../devchain/helpers.ts';
import { pairHarness, type Side } from './pair-harness.ts';

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** A nonce source for tests only: k1, k2 from a hash of a seed and a counter. Never for a node. */
function seededNonces(seed: number): NonNullable<MachineEnv['nonce']> {
  let i = 0;
  const scalar = (tag: number) => {
    const x = BigInt(bytesToHex(ckbHash(new Uint8Array([seed, i >> 8, i & 0xff, tag]))).slice(0, 66)) % N;
    return Uint8Array.from(Buffer.from((x === 0n ? 1n : x).toString(16).padStart(64, '0'), 'hex'));
  };
  return (pubkey) => {
    i++;
    const k1 = scalar(1);
    const k2 = scalar(2);
    const secret = new Uint8Array(97);
    secret.set(k1, 0);
    secret.set(k2, 32);
    secret.set(pubkey, 64);
    const pub = new Uint8Array(66);
    pub.set(nobleCurve.mulG(k1), 0);
    pub.set(nobleCurve.mulG(k2), 33);
    return { secret, public: pub };
  };
}

const chains: TestChain[] = [];
afterEach(() => {
  for (const t of chains.splice(0)) t.close();
});

/** One run of the story on a fresh dev chain; what each side sent (encoded) and its final state. */
function story(rules: 'strand' | 'fnn', nonce?: MachineEnv['nonce']) {
  const t = openTestChain();
  chains.push(t);
  let clock = 1_700_000_000_000;
  const h = pairHarness(t, () => clock, { nonce });
  const { A, B } = h.readyPair({ rules });
  const sent: Record<'A' | 'B', string[]> = { A: [], B: [] };
  const record = () => {
    for (const s of [A, B])
      sent[s.name].push(...s.sent.splice(0).map((m) => bytesToHex(encodeChannelBody(m))));
  };
  const pay = (from: Side, to: Side, amount: bigint, fill: number) => {
    const preimage = new Uint8Array(32).fill(fill);
    const id = from.ch.nextTlcId.offered;
    h.feed(from, to, {
      type: 'addTlc',
      cmd: {
        amount,
        paymentHash: ckbHash(preimage),
        expiry: 1_800_000_000_000n,
        hashAlgorithm: 0,
        onion: new Uint8Array(0),
      },
    });
    h.run(from, to);
    clock += 1000;
    h.feed(to, from, { type: 'removeTlc', id, reason: { preimage } });
    h.run(from, to);
    record();
  };
  pay(A, B, 30n * CKB, 1);
  pay(B, A, 10n * CKB, 2);
  h.feed(A, B, { type: 'shutdown', cmd: {} });
  h.run(A, B);
  h.feed(A, B, { type: 'closeConfirmed' });
  h.feed(B, A, { type: 'closeConfirmed' });
  record();
  const state = (c: Channel) => serializeChannel(c);
  return { sent, states: [state(A.ch), state(B.ch)], closed: [A.ch.state, B.ch.state] };
}

describe('replay of a channel from its inputs', () => {
  for (const rules of ['strand', 'fnn'] as const) {
    it(`${rules} rules: the same inputs and nonce source give the same bytes and states`, () => {
      const first = story(rules, seededNonces(7));
      const second = story(rules, seededNonces(7));
      expect(first.closed).toEqual(['CLOSED', 'CLOSED']);
      expect(first.sent.A.length).toBeGreaterThan(5);
      expect(second.sent).toEqual(first.sent);
      expect(second.states).toEqual(first.states);
      // Another seed: other nonces, so other signatures on the wire.
      const other = story(rules, seededNonces(8));
      expect(other.sent.A).not.toEqual(first.sent.A);
    });
  }

  it('without a nonce source, nonces are fresh random ones: two runs differ', () => {
    const a = story('strand');
    const b = story('strand');
    expect(a.closed).toEqual(['CLOSED', 'CLOSED']);
    expect(b.sent.A).not.toEqual(a.sent.A);
  });
});
