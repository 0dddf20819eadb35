/**
 * The pure parts of settling and watching: which unlock comes next, the scripts the contract
 * will require, the delay fractions, and the chain data readers under hostile bytes.
 */
import { ccc } from '@ckb-ccc/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pubOf } from '../../src/channel/keys.ts';
import {
  parseSettlementScript,
  scriptAfter,
  scriptAfterWitness,
} from '../../src/channel/settlement-script.ts';
import { commitmentLockArgs, settlementScript, XW } from '../../src/channel/tx.ts';
import { blake160, ckbHash, sha256 } from '../../src/crypto/hash.ts';
import {
  isPeersCommitment,
  parseCommitmentArgs,
  preimagesInWitness,
} from '../../src/watchtower/chain-data.ts';
import { mulDelay, nextSettlement, type SettleInput } from '../../src/watchtower/settle.ts';
import { scriptFromSettlementData } from '../../src/watchtower/targets.ts';

const CKB = 100_000_000n;
const key = (n: number) => new Uint8Array(32).fill(n);
const HOLDER = key(1);
const OTHER = key(2);
const pkh = (sk: Uint8Array) => blake160(pubOf(sk));
const preimage = new Uint8Array(32).fill(0x55);
const EXPIRY_MS = 1_800_000_000_000n;

/** A commitment cell held by HOLDER with one TLC (offered by the holder when `holderOffers`). */
function cell(holderOffers: boolean, flag = 0, amounts: [bigint, bigint] = [400n * CKB, 250n * CKB]) {
  const script = settlementScript(
    [
      {
        offeredByHolder: holderOffers,
        hashAlgorithm: 1,
        amount: 100n * CKB,
        paymentHash: sha256(preimage),
        holderKeyHash: pkh(HOLDER),
        otherKeyHash: pkh(OTHER),
        expiry: EXPIRY_MS,
      },
    ],
    { holderPkh: pkh(HOLDER), holderAmount: amounts[0], otherPkh: pkh(OTHER), otherAmount: amounts[1] },
  );
  const args = commitmentLockArgs([pubOf(key(3)), pubOf(key(4))], 1n | (1n << 40n), 7n, script);
  args[56] = flag;
  return { script, args };
}

function input(over: Partial<SettleInput> & Pick<SettleInput, 'script' | 'args' | 'role'>): SettleInput {
  const mine = over.role === 'holder' ? HOLDER : OTHER;
  return {
    capacity: 750n * CKB - 456n,
    partyKey: mine,
    tlcKey: (e) =>
      e
        .subarray(over.role === 'holder' ? 37 : 57, over.role === 'holder' ? 57 : 77)
        .every((b, i) => b === pkh(mine)[i])
        ? mine
        : null,
    preimage: () => null,
    nowSec: 1_700_000_000n,
    continuationOccupied: 98n * CKB,
    ...over,
  };
}

describe('delay fractions', () => {
  it('match the contract examples for one epoch', () => {
    const D = 0xa000010000000001n;
    expect(mulDelay(D, 1n, 3n)).toBe(0xa000030001000000n);
    expect(mulDelay(D, 2n, 3n)).toBe(0xa000030002000000n);
    expect(mulDelay(D, 1n, 1n)).toBe(0xa000010000000001n);
  });
});

describe('next settlement', () => {
  it('the receiver claims a TLC by preimage after a third of the delay', () => {
    const c = cell(true);
    const a = nextSettlement(input({ ...c, role: 'other', preimage: () => preimage }))!;
    expect(a.t).toBe(0);
    expect(a.preimage).toEqual(preimage);
    expect(a.since).toBe(mulDelay(0xa000010000000001n, 1n, 3n));
    expect(a.feeSince).toBe(0n);
    expect(a.amount).toBe(100n * CKB);
    const next = scriptAfter(parseSettlementScript(c.script)!, 0, null);
    expect(next[0]).toBe(0);
    expect(a.continuation).toEqual({
      capacity: 650n * CKB - 456n,
      args: ccc.bytesConcat(c.args.subarray(0, 36), blake160(next), [1]),
    });
  });

  it('the offerer reclaims an expired TLC with a timestamp since, not before', () => {
    const c = cell(true);
    expect(nextSettlement(input({ ...c, role: 'holder', nowSec: EXPIRY_MS / 1000n - 1n }))).toBeNull();
    const a = nextSettlement(input({ ...c, role: 'holder', nowSec: EXPIRY_MS / 1000n }))!;
    expect(a.t).toBe(0);
    expect(a.preimage).toBeNull();
    expect(a.since).toBe(mulDelay(0xa000010000000001n, 2n, 3n));
    expect(a.feeSince).toBe((0x40n << 56n) | (EXPIRY_MS / 1000n));
  });

  it('no share is taken while a TLC we may still claim is pending', () => {
    const c = cell(false);
    // Other offered it: the holder receives it (no preimage yet) — holder waits.
    expect(nextSettlement(input({ ...c, role: 'holder' }))).toBeNull();
    // After expiry the holder may leave it to its offerer and take its share (0xFE, full delay).
    const late = nextSettlement(input({ ...c, role: 'holder', nowSec: EXPIRY_MS / 1000n }))!;
    expect(late.t).toBe(0xfe);
    expect(late.since).toBe(0xa000010000000001n);
    expect(late.amount).toBe(400n * CKB);
  });

  it('a share on a continuation cell needs no since, and the last one leaves no cell', () => {
    const none = settlementScript([], {
      holderPkh: pkh(HOLDER),
      holderAmount: 400n * CKB,
      otherPkh: new Uint8Array(20),
      otherAmount: 0n,
    });
    const args = commitmentLockArgs([pubOf(key(3)), pubOf(key(4))], 1n | (1n << 40n), 7n, none);
    args[56] = 1;
    const a = nextSettlement(input({ script: none, args, role: 'holder', capacity: 400n * CKB - 456n }))!;
    expect(a.t).toBe(0xfe);
    expect(a.since).toBe(0n);
    expect(a.continuation).toBeNull();
    // The last settler absorbs the commitment fee: it takes what the cell holds.
    expect(a.amount).toBe(400n * CKB - 456n);
    // Nothing more for the other side, whose block is already settled.
    expect(nextSettlement(input({ script: none, args, role: 'other', capacity: 400n * CKB }))).toBeNull();
  });

  it('the last share takes what an abandoned TLC left in the cell rather than leave it as fee', () => {
    // The other side offered a TLC, let it expire without reclaiming it, and settled its share:
    // the holder's share is the last one, and nothing after it checks outputs.
    const c = cell(false, 1, [400n * CKB, 250n * CKB]);
    const settledOther = scriptAfter(parseSettlementScript(c.script)!, null, 0xff);
    const args = commitmentLockArgs([pubOf(key(3)), pubOf(key(4))], 1n | (1n << 40n), 7n, settledOther);
    args[56] = 1;
    const a = nextSettlement(
      input({ script: settledOther, args, role: 'holder', capacity: 500n * CKB, nowSec: EXPIRY_MS / 1000n }),
    )!;
    expect(a.t).toBe(0xfe);
    expect(a.continuation).toBeNull();
    // Its 400 and the abandoned 100: not 400 with 100 left to the miners.
    expect(a.amount).toBe(500n * CKB);
  });

  it('refuses a continuation below its occupied capacity', () => {
    const c = cell(true, 0, [400n * CKB, 50n * CKB]);
    const a = nextSettlement(
      input({
        ...c,
        role: 'other',
        preimage: () => preimage,
        capacity: 150n * CKB,
        continuationOccupied: 98n * CKB,
      }),
    );
    expect(a).toBeNull();
  });

  it('without a key for the TLC it is left alone', () => {
    const c = cell(true);
    expect(
      nextSettlement(input({ ...c, role: 'other', preimage: () => preimage, tlcKey: () => null })),
    ).toBeNull();
  });
});

describe('scripts and chain data', () => {
  it('the script after a settlement witness is what the contract requires of output 0', () => {
    const c = cell(true);
    const w = ccc.bytesConcat(XW, [1], c.script, [0, 1], new Uint8Array(65), preimage);
    expect(scriptAfterWitness(w)).toEqual(scriptAfter(parseSettlementScript(c.script)!, 0, null));
    const party = ccc.bytesConcat(XW, [1], c.script, [0xff, 0], new Uint8Array(65));
    const after = scriptAfterWitness(party)!;
    expect(after.subarray(0, 1 + 85)).toEqual(c.script.subarray(0, 1 + 85));
    expect(after.subarray(1 + 85 + 36).every((b) => b === 0)).toBe(true);
  });

  it('preimages revealed in a witness are checked against their TLC', () => {
    const c = cell(true);
    const good = ccc.bytesConcat(XW, [1], c.script, [0, 1], new Uint8Array(65), preimage);
    expect(preimagesInWitness(good)).toEqual([{ paymentHash: sha256(preimage), preimage }]);
    const wrong = ccc.bytesConcat(XW, [1], c.script, [0, 1], new Uint8Array(65), new Uint8Array(32));
    expect(preimagesInWitness(wrong)).toEqual([]);
    // A revocation witness (uc = 0) reveals nothing.
    expect(preimagesInWitness(ccc.bytesConcat(XW, [0], new Uint8Array(104)))).toEqual([]);
  });

  it('commitment args: version, delay, and whose commitment it is', () => {
    const local = pubOf(key(3));
    const remote = pubOf(key(4));
    const a = parseCommitmentArgs(
      commitmentLockArgs([local, remote], 1n | (1n << 40n), 9n, new Uint8Array(73)),
    )!;
    expect(a.version).toBe(9n);
    expect(a.delay).toBe(0xa000010000000001n);
    expect(isPeersCommitment(a, local, remote)).toBe(true);
    expect(isPeersCommitment(a, remote, local)).toBe(false);
    expect(parseCommitmentArgs(new Uint8Array(56))).toBeNull();
  });

  it('a script from SettlementData orders TLCs as the holder sees them', () => {
    const localKey = key(5);
    const remoteKey = pubOf(key(6));
    const tlc = (offered: boolean, id: bigint) => ({
      tlcId: { offered, id },
      hashAlgorithm: 'ckb_hash' as const,
      paymentAmount: CKB * (id + 1n),
      paymentHash: ccc.hexFrom(ckbHash(new Uint8Array([Number(id)]))),
      expiry: EXPIRY_MS,
      localKey: ccc.hexFrom(localKey),
      remoteKey: ccc.hexFrom(remoteKey),
    });
    const d = {
      localAmount: 10n * CKB,
      remoteAmount: 20n * CKB,
      tlcs: [tlc(true, 1n), tlc(false, 0n), tlc(true, 0n)],
    };
    // The peer holds it: the TLCs it offered (our received ones) come first.
    const s = parseSettlementScript(scriptFromSettlementData(d, true, pubOf(HOLDER), pubOf(OTHER)))!;
    expect(s.tlcs.map((e) => [e[0]! & 1, Number(ccc.numLeFromBytes(e.subarray(1, 17)) / CKB)])).toEqual([
      [1, 1],
      [0, 1],
      [0, 2],
    ]);
    expect(s.tlcs[0]!.subarray(37, 57)).toEqual(blake160(remoteKey));
    expect(s.tlcs[0]!.subarray(57, 77)).toEqual(blake160(pubOf(localKey)));
    expect(s.party.subarray(0, 20)).toEqual(blake160(pubOf(OTHER)));
    expect(ccc.numLeFromBytes(s.party.subarray(20, 36))).toBe(20n * CKB);
  });

  it('hostile bytes never throw', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.boolean(), (bytes, prefixed) => {
        const w = prefixed ? ccc.bytesConcat(XW, bytes) : bytes;
        preimagesInWitness(w);
        scriptAfterWitness(w);
        parseCommitmentArgs(bytes);
        const s = parseSettlementScript(bytes);
        if (s) scriptAfter(s, 0, 0xfe);
      }),
      { numRuns: 2000 },
    );
  });
});
