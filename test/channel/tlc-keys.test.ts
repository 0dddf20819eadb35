/**
 * Per-TLC keys (`src/channel/tlc-keys.ts`, `fiber-channel-protocol.md` §2 "TLC keys"): both sides
 * derive the same two keys for a TLC from the commitment numbers at its creation, the keys differ
 * from TLC to TLC, the commitments lock each TLC to them, and our secret matches our public key.
 * Pure machines on an in-process dev chain.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildCommitment } from '../../src/channel/commitment.ts';
import {
  commitmentPoint,
  deriveChannelKeys,
  pubOf,
  tweakPubkey,
  tweakSecret,
} from '../../src/channel/keys.ts';
import type { Channel, Tlc } from '../../src/channel/state.ts';
import { tlcSecret } from '../../src/channel/tlc-keys.ts';
import { CKB } from '../../src/channel/tx.ts';
import { bytesToHex, hexToBytes } from '../../src/codec/hex.ts';
import { blake160, ckbHash } from '../../src/crypto/hash.ts';
import { settlementDataFromJson } from '../../src/rpc/modules/watchtower.ts';
import { watchParamsOf } from '../../src/watchtower/feed.ts';
import { scriptFromSettlementData } from '../../src/watchtower/targets.ts';
import { openTestChain, type TestChain } from '../devchain/helpers.ts';
import { pairHarness, type Side } from './pair-harness.ts';

let t: TestChain;
let h: ReturnType<typeof pairHarness>;
beforeEach(() => {
  t = openTestChain();
  h = pairHarness(t);
});
afterEach(() => t.close());

const preimage = (n: number) => new Uint8Array(32).fill(n);
const tlc = (n: number) => ({
  amount: 10n * CKB,
  paymentHash: ckbHash(preimage(n)),
  expiry: 1_800_000_000_000n,
  hashAlgorithm: 0,
  onion: new Uint8Array(0),
});
const keysOf = (s: Side) => deriveChannelKeys(hexToBytes(s.ch.seed));
const only = (s: Side, offered: boolean, id: bigint): Tlc => {
  const x = s.ch.tlcs.find((y) => y.offered === offered && y.id === id);
  if (!x) throw new Error(`${s.name} has no TLC ${id}`);
  return x;
};

/** The 85-byte TLC entries of a settlement script, in order. */
function entries(script: Uint8Array): Uint8Array[] {
  const n = script[0] as number;
  return Array.from({ length: n }, (_, i) => script.subarray(1 + 85 * i, 1 + 85 * (i + 1)));
}

describe('TLC keys', () => {
  it('the tweak of a secret and of its public key agree', () => {
    const k = deriveChannelKeys(new Uint8Array(32).fill(3));
    const point = commitmentPoint(k.commitmentSeed, 5n);
    expect(bytesToHex(pubOf(tweakSecret(k.tlcBaseKey, point)))).toBe(
      bytesToHex(tweakPubkey(k.tlcBasepoint, point)),
    );
    expect(bytesToHex(tweakPubkey(k.tlcBasepoint, point))).not.toBe(bytesToHex(k.tlcBasepoint));
  });

  it('both sides derive the same keys for a TLC, from the points of its creation', () => {
    const { A, B } = h.readyPair();
    const n0 = { ...A.ch.commitmentNumbers };
    expect(n0).toEqual(B.ch.commitmentNumbers);
    h.feed(A, B, { type: 'addTlc', cmd: tlc(1) });
    h.run(A, B);
    const offered = only(A, true, 0n);
    const received = only(B, false, 0n);
    expect(offered.createdAt).toEqual(n0);
    expect(received.createdAt).toEqual(n0);
    // A's own key is B's "remote" key for the TLC, and the other way round.
    expect(offered.localKey).toBe(received.remoteKey);
    expect(offered.remoteKey).toBe(received.localKey);
    // Each is the base point tweaked by the owner's point for the creation numbers (L = R here).
    const ka = keysOf(A);
    const kb = keysOf(B);
    expect(offered.localKey).toBe(
      bytesToHex(tweakPubkey(ka.tlcBasepoint, commitmentPoint(ka.commitmentSeed, n0.remote))),
    );
    expect(received.localKey).toBe(
      bytesToHex(tweakPubkey(kb.tlcBasepoint, commitmentPoint(kb.commitmentSeed, n0.remote))),
    );
    // The secrets that sign claims match.
    expect(bytesToHex(pubOf(tlcSecret(ka, offered)))).toBe(offered.localKey);
    expect(bytesToHex(pubOf(tlcSecret(kb, received)))).toBe(received.localKey);
  });

  it('a RevokeAndAck carries the point the peer files under its new number', () => {
    const { A, B } = h.readyPair();
    h.feed(A, B, { type: 'addTlc', cmd: tlc(1) });
    h.run(A, B);
    for (const [me, peer] of [
      [A, B],
      [B, A],
    ] as const) {
      const pk = keysOf(peer);
      const L = me.ch.commitmentNumbers.local;
      const kept = me.ch.remote?.commitmentPoints?.find((p) => p.n === L);
      expect(kept?.point).toBe(bytesToHex(commitmentPoint(pk.commitmentSeed, L)));
    }
  });

  it('each TLC has its own keys, and each commitment locks it to them', () => {
    const { A, B } = h.readyPair();
    h.feed(A, B, { type: 'addTlc', cmd: tlc(1) });
    h.run(A, B);
    h.feed(B, A, { type: 'addTlc', cmd: tlc(2) });
    h.run(A, B);
    const first = only(A, true, 0n);
    const second = only(A, false, 0n);
    expect(second.createdAt?.local).toBe((first.createdAt?.local ?? 0n) + 1n);
    expect(second.localKey).not.toBe(first.localKey);
    expect(second.remoteKey).not.toBe(first.remoteKey);
    const hash = (x?: string) => bytesToHex(blake160(hexToBytes(x as string)));
    for (const forRemote of [false, true]) {
      // Holder first (37..57), then the other (57..77); the holder's offered TLCs come first.
      const script = buildCommitment(A.ch, forRemote, h.env()).script;
      const [e0, e1] = entries(script);
      const holderOffered = forRemote ? second : first;
      const otherOffered = forRemote ? first : second;
      for (const [e, x] of [
        [e0, holderOffered],
        [e1, otherOffered],
      ] as const) {
        const holderKey = forRemote ? x.remoteKey : x.localKey;
        const otherKey = forRemote ? x.localKey : x.remoteKey;
        expect(bytesToHex((e as Uint8Array).subarray(37, 57))).toBe(hash(holderKey));
        expect(bytesToHex((e as Uint8Array).subarray(57, 77))).toBe(hash(otherKey));
      }
      // Both sides build the same bytes for the same commitment.
      expect(bytesToHex(buildCommitment(B.ch, !forRemote, h.env()).script)).toBe(bytesToHex(script));
    }
    // And the round completed with both signatures verified over those commitments.
    h.feed(A, B, { type: 'removeTlc', id: 0n, reason: { preimage: preimage(2) } });
    h.feed(B, A, { type: 'removeTlc', id: 0n, reason: { preimage: preimage(1) } });
    h.run(A, B);
    expect(A.ch.tlcs).toEqual([]);
    expect(B.ch.tlcs).toEqual([]);
  });

  it('the TLCs of one batch share the keys of their round, as derived afresh; the next round has its own', () => {
    const { A, B } = h.readyPair();
    const n0 = { ...A.ch.commitmentNumbers };
    h.feed(A, B, {
      type: 'tlcBatch',
      cmds: [1, 2, 3].map((n) => ({ type: 'addTlc' as const, cmd: tlc(n) })),
    });
    h.run(A, B);
    const ka = keysOf(A);
    const kb = keysOf(B);
    const ours = bytesToHex(tweakPubkey(ka.tlcBasepoint, commitmentPoint(ka.commitmentSeed, n0.remote)));
    const theirs = bytesToHex(tweakPubkey(kb.tlcBasepoint, commitmentPoint(kb.commitmentSeed, n0.local)));
    for (const id of [0n, 1n, 2n]) {
      expect([only(A, true, id).localKey, only(A, true, id).remoteKey]).toEqual([ours, theirs]);
      expect([only(B, false, id).localKey, only(B, false, id).remoteKey]).toEqual([theirs, ours]);
    }
    h.feed(A, B, { type: 'addTlc', cmd: tlc(4) });
    h.run(A, B);
    const next = only(A, true, 3n);
    expect(next.localKey).not.toBe(ours);
    expect(next.localKey).toBe(
      bytesToHex(
        tweakPubkey(ka.tlcBasepoint, commitmentPoint(ka.commitmentSeed, next.createdAt?.remote as bigint)),
      ),
    );
  });

  it("what feeds a standalone watchtower rebuilds both commitments' scripts, TLC keys included", () => {
    const { A, B } = h.readyPair();
    h.feed(A, B, { type: 'addTlc', cmd: tlc(1) });
    h.run(A, B);
    h.feed(B, A, { type: 'addTlc', cmd: tlc(2) });
    h.run(A, B);
    const p = watchParamsOf(A.ch, h.env());
    const data = settlementDataFromJson(p.create.settlement_data);
    const localPub = pubOf(hexToBytes(p.create.local_settlement_key));
    const remotePub = hexToBytes(p.create.remote_settlement_key);
    for (const peers of [false, true]) {
      expect(bytesToHex(scriptFromSettlementData(data, peers, localPub, remotePub))).toBe(
        bytesToHex(buildCommitment(A.ch, peers, h.env()).script),
      );
    }
  });

  it('a channel stored before tweaked keys keeps the base keys, and its rounds still complete', () => {
    const { A, B } = h.readyPair();
    const legacy = (s: Side) => {
      const { commitmentPoints: _p, ...remote } = s.ch.remote as NonNullable<Channel['remote']>;
      s.ch = { ...s.ch, remote };
    };
    legacy(A);
    legacy(B);
    h.feed(A, B, { type: 'addTlc', cmd: tlc(1) });
    h.run(A, B);
    const x = only(B, false, 0n);
    expect(x.createdAt).toBeUndefined();
    expect(tlcSecret(keysOf(B), x)).toEqual(keysOf(B).tlcBaseKey);
    const e = entries(buildCommitment(B.ch, false, h.env()).script)[0] as Uint8Array;
    expect(bytesToHex(e.subarray(37, 57))).toBe(bytesToHex(blake160(hexToBytes(B.ch.local.tlcBasepoint))));
    h.feed(B, A, { type: 'removeTlc', id: 0n, reason: { preimage: preimage(1) } });
    h.run(A, B);
    expect(B.ch.tlcs).toEqual([]);
    expect(A.ch.remote?.commitmentPoints).toBeUndefined();
  });
});
