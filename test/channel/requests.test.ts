/**
 * The channel terms asked for over RPC, pure (`channel/requests.ts`): defaults, fnn's bounds with
 * its texts, and the auto-accept decision for channels a peer opens.
 */
import { describe, expect, it } from 'vitest';
import { autoAcceptFunding, openTerms } from '../../src/channel/requests.ts';
import { CKB } from '../../src/channel/tx.ts';
import { DomainError } from '../../src/codec/errors.ts';

const lock = { codeHash: `0x${'9b'.repeat(32)}`, hashType: 'type' as const, args: `0x${'11'.repeat(20)}` };
const ctx = {
  udt: null,
  rules: 'fnn' as const,
  defaultShutdownScript: lock,
  tlc: { expiryDelta: 14_400_000n, minValue: 0n, feeProportionalMillionths: 1000n },
};
const refused = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    return (e as Error).message;
  }
  throw new Error('not refused');
};

describe('openTerms', () => {
  it("fills in the reference's defaults and keeps the reserve apart from the funding", () => {
    const t = openTerms({ pubkey: '02', fundingAmount: 500n * CKB }, ctx);
    expect(t.reserve).toBe(99n * CKB); // fnn's rules: a 57-byte-args cell + 1 CKB
    expect(t.fundingAmount).toBe(401n * CKB);
    expect([t.isPublic, t.fundingFeeRate, t.commitmentFeeRate, t.delayEpoch]).toEqual([
      true,
      1000n,
      1000n,
      0x0000010000000001n,
    ]);
    expect([t.maxTlcNumberInFlight, t.maxTlcValueInFlight, t.tlcExpiryDelta]).toEqual([
      125n,
      (1n << 128n) - 1n,
      14_400_000n,
    ]);
    expect(t.external).toBeUndefined();
  });

  it("refuses each bound with fnn's text", () => {
    const open = (o: object) => () => openTerms({ pubkey: '02', fundingAmount: 500n * CKB, ...o }, ctx);
    expect(refused(open({ fundingAmount: 98n * CKB }))).toBe(
      `Invalid parameter: The funding amount (${98n * CKB}) should be greater than or equal to ${99n * CKB}`,
    );
    expect(refused(open({ fundingFeeRate: 999n }))).toBe(
      'Invalid parameter: Funding fee rate is less than 1000',
    );
    expect(refused(open({ commitmentFeeRate: 1n }))).toBe(
      'Invalid parameter: Commitment fee rate is less than 1000',
    );
    expect(refused(open({ commitmentDelayEpoch: 0n }))).toMatch(/less than the minimal value 1$/);
    expect(refused(open({ commitmentDelayEpoch: 85n }))).toMatch(/greater than the maximal value 84$/);
    expect(refused(open({ maxTlcNumberInFlight: 254n }))).toMatch(/system maximal value 253$/);
    expect(refused(open({ tlcExpiryDelta: 1n }))).toMatch(/TLC expiry delta is too small/);
  });

  it('a token channel: the amount is in tokens, zero refused, the reserve in CKB beside it', () => {
    const udt = { codeHash: `0x${'ee'.repeat(32)}`, hashType: 'type' as const, args: '0x01' };
    const t = openTerms({ pubkey: '02', fundingAmount: 600n }, { ...ctx, udt });
    expect([t.fundingAmount, t.udt]).toEqual([600n, udt]);
    expect(t.reserve).toBeGreaterThan(0n);
    expect(refused(() => openTerms({ pubkey: '02', fundingAmount: 0n }, { ...ctx, udt }))).toBe(
      'Invalid parameter: The funding amount (0) should be greater than 0',
    );
  });
});

describe('autoAcceptFunding', () => {
  const p = { minCkbFundingAmount: 100n * CKB, ckbFundingAmount: 99n * CKB, reserve: 99n * CKB };
  it('CKB: accepted with our amount less the reserve once the opener meets the minimum', () => {
    expect(autoAcceptFunding(100n * CKB, p)).toBe(0n);
    expect(autoAcceptFunding(100n * CKB, { ...p, ckbFundingAmount: 200n * CKB })).toBe(101n * CKB);
    expect(autoAcceptFunding(100n * CKB - 1n, p)).toBeNull();
    // Our amount must cover our reserve; nothing to add means the operator decides.
    expect(autoAcceptFunding(500n * CKB, { ...p, ckbFundingAmount: 98n * CKB })).toBeNull();
    expect(autoAcceptFunding(500n * CKB, { ...p, ckbFundingAmount: 0n })).toBeNull();
  });
  it("tokens: only with the whitelist's auto_accept_amount, adding no tokens", () => {
    expect(autoAcceptFunding(600n, { ...p, udtMinimum: 500n })).toBe(0n);
    expect(autoAcceptFunding(499n, { ...p, udtMinimum: 500n })).toBeNull();
    expect(autoAcceptFunding(10n ** 9n, { ...p, udtMinimum: null })).toBeNull();
  });
});
