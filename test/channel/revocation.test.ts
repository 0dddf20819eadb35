/**
 * A revocation's keys and message without a commitment built (`revocation.ts`) are those of the
 * commitment it revokes: the same keys, and a message over the same first 28 bytes of its lock
 * args, for either holder, with TLCs pending and at any version.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { buildCommitment } from '../../src/channel/commitment.ts';
import { revocationOutput, revocationToSign } from '../../src/channel/revocation.ts';
import type { Channel } from '../../src/channel/state.ts';
import { CKB, revocationMessage } from '../../src/channel/tx.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { openTestChain, type TestChain } from '../devchain/helpers.ts';
import { pairHarness } from './pair-harness.ts';

let t: TestChain;
let h: ReturnType<typeof pairHarness>;
beforeEach(() => {
  t = openTestChain();
  h = pairHarness(t);
});
afterEach(() => t.close());

const tlc = (amount: bigint, fill: number) => ({
  amount,
  paymentHash: ckbHash(new Uint8Array(32).fill(fill)),
  expiry: 1_800_000_000_000n,
  hashAlgorithm: 0,
  onion: new Uint8Array(0),
});

/** The revocation as it was made before: from the holder's commitment, built whole. */
function fromCommitment(ch: Channel, holderIsLocal: boolean, version: bigint) {
  const c = buildCommitment(ch, !holderIsLocal, h.env());
  const rv = revocationOutput(ch, holderIsLocal, h.env());
  return { keys: c.revocationKeys, msg: revocationMessage(rv.out, rv.data, c.args, version), args: c.args };
}

it('signs what the revoked commitment would have it sign, for both holders and any version', () => {
  const { A, B } = h.readyPair();
  h.feed(A, B, { type: 'addTlc', cmd: tlc(100n * CKB, 1) });
  h.run(A, B);
  h.feed(B, A, { type: 'addTlc', cmd: tlc(30n * CKB, 2) });
  h.run(B, A);
  expect(A.ch.tlcs).toHaveLength(2);
  for (const side of [A, B])
    for (const holderIsLocal of [true, false])
      for (const shift of [0n, 1n, 1000n]) {
        const ch = {
          ...side.ch,
          commitmentNumbers: {
            local: side.ch.commitmentNumbers.local + shift,
            remote: side.ch.commitmentNumbers.remote + shift,
          },
        };
        const version = (holderIsLocal ? ch.commitmentNumbers.remote : ch.commitmentNumbers.local) - 1n;
        const old = fromCommitment(ch, holderIsLocal, version);
        const now = revocationToSign(ch, holderIsLocal, version, h.env());
        expect(now.keys).toEqual(old.keys);
        expect(Buffer.from(now.msg).toString('hex')).toBe(Buffer.from(old.msg).toString('hex'));
        expect(now.argsPrefix).toEqual(old.args.subarray(0, 28));
      }
});

it('differs between the holders and between versions', () => {
  const { A } = h.readyPair();
  const a = revocationToSign(A.ch, true, 5n, h.env());
  expect(revocationToSign(A.ch, false, 5n, h.env()).msg).not.toEqual(a.msg);
  expect(revocationToSign(A.ch, true, 6n, h.env()).msg).not.toEqual(a.msg);
});
