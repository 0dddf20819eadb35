/**
 * The terms of a channel asked for over RPC (`open_channel`, `accept_channel`), pure: defaults
 * filled in and every bound checked with fnn's error texts, before anything is stored or sent.
 */
import { ccc } from '@ckb-ccc/core';
import { MAX_TLC_EXPIRY_LIMIT, MIN_TLC_EXPIRY_DELTA } from '../codec/index.ts';
import { ChannelError } from './errors.ts';
import type { AcceptParams, OpenParams } from './open.ts';
import { type ChannelRules, reserveFor } from './reserve.ts';
import { cellDepData, scriptData, toScript } from './script-data.ts';
import type { Channel, PartyParams, ScriptData } from './state.ts';
import { SIDE_FLOOR } from './tx.ts';

/** One epoch, the reference's default `commitment_delay_epoch`. */
const DEFAULT_DELAY = 0x0000010000000001n;

export interface OpenRequest {
  pubkey: string;
  /** Including our reserve (the seed: 500 CKB → local balance 438). */
  fundingAmount: bigint;
  isPublic?: boolean;
  fundingUdtTypeScript?: ccc.ScriptLike | null;
  shutdownScript?: ccc.ScriptLike;
  commitmentDelayEpoch?: bigint;
  commitmentFeeRate?: bigint;
  fundingFeeRate?: bigint;
  tlcExpiryDelta?: bigint;
  tlcMinValue?: bigint;
  tlcFeeProportionalMillionths?: bigint;
  maxTlcValueInFlight?: bigint;
  maxTlcNumberInFlight?: bigint;
  /** External funding: our part is paid from cells of this lock, signed off-node by the user. */
  external?: { lock: ccc.ScriptLike; cellDeps?: ccc.CellDepLike[] };
}

export interface AcceptRequest {
  temporaryChannelId: string;
  /** Including our reserve. */
  fundingAmount: bigint;
  shutdownScript?: ccc.ScriptLike;
  maxTlcValueInFlight?: bigint;
  maxTlcNumberInFlight?: bigint;
  tlcExpiryDelta?: bigint;
  tlcMinValue?: bigint;
  tlcFeeProportionalMillionths?: bigint;
}

export interface OpenContext {
  /** The whitelisted UDT of a token channel, else null. */
  udt: ScriptData | null;
  rules: ChannelRules;
  defaultShutdownScript: ccc.ScriptLike;
  tlc: { expiryDelta: bigint; minValue: bigint; feeProportionalMillionths: bigint };
  minTlcExpiryDelta?: bigint;
}

/** What `openChannel` (the machine) needs beyond who and which keys: checked and defaulted. */
export type OpenTerms = Omit<OpenParams, 'peer' | 'rules' | 'seed' | 'tempId' | 'udtCellDeps'>;

export function openTerms(r: OpenRequest, ctx: OpenContext): OpenTerms {
  const udt = ctx.udt;
  const shutdown = ccc.Script.from(r.shutdownScript ?? ctx.defaultShutdownScript);
  const reserve = reserveFor(shutdown, udt, ctx.rules);
  // A UDT channel's funding amount is in tokens; our reserve comes in CKB beside it.
  if (udt && r.fundingAmount <= 0n)
    throw new ChannelError(
      'InvalidParameter',
      'Invalid parameter: The funding amount (0) should be greater than 0',
    );
  const minimum = reserve > SIDE_FLOOR ? reserve : SIDE_FLOOR;
  if (!udt && r.fundingAmount < minimum) {
    throw new ChannelError(
      'InvalidParameter',
      `Invalid parameter: The funding amount (${r.fundingAmount}) should be greater than or equal to ${minimum}`,
    );
  }
  const fundingFeeRate = r.fundingFeeRate ?? 1000n;
  const commitmentFeeRate = r.commitmentFeeRate ?? 1000n;
  if (fundingFeeRate < 1000n)
    throw new ChannelError('InvalidParameter', 'Invalid parameter: Funding fee rate is less than 1000');
  if (commitmentFeeRate < 1000n)
    throw new ChannelError('InvalidParameter', 'Invalid parameter: Commitment fee rate is less than 1000');
  const delay = r.commitmentDelayEpoch ?? DEFAULT_DELAY;
  const epochs = delay & 0xff_ffffn;
  if (epochs < 1n)
    throw new ChannelError(
      'InvalidParameter',
      `Invalid parameter: Commitment delay epoch ${delay} is less than the minimal value 1`,
    );
  if (epochs > 84n)
    throw new ChannelError(
      'InvalidParameter',
      `Invalid parameter: Commitment delay epoch ${delay} is greater than the maximal value 84`,
    );
  const maxTlcNumber = r.maxTlcNumberInFlight ?? 125n;
  if (maxTlcNumber > 253n)
    throw new ChannelError(
      'InvalidParameter',
      `Invalid parameter: Max TLC number in flight ${maxTlcNumber} is greater than the system maximal value 253`,
    );
  const delta = r.tlcExpiryDelta ?? ctx.tlc.expiryDelta;
  checkExpiryDelta(delta, ctx.minTlcExpiryDelta);
  return {
    isPublic: r.isPublic ?? true,
    fundingAmount: udt ? r.fundingAmount : r.fundingAmount - reserve,
    reserve,
    shutdownScript: scriptData(shutdown),
    udt,
    fundingFeeRate,
    commitmentFeeRate,
    delayEpoch: delay,
    maxTlcValueInFlight: r.maxTlcValueInFlight ?? (1n << 128n) - 1n,
    maxTlcNumberInFlight: maxTlcNumber,
    tlcExpiryDelta: delta,
    tlcMinValue: r.tlcMinValue ?? ctx.tlc.minValue,
    tlcFeeProportionalMillionths: r.tlcFeeProportionalMillionths ?? ctx.tlc.feeProportionalMillionths,
    external: r.external
      ? { lock: scriptData(r.external.lock), cellDeps: (r.external.cellDeps ?? []).map(cellDepData) }
      : undefined,
  };
}

/**
 * `accept_channel`'s terms for the opening `ch0`: our reserve and shutdown script, and the
 * parameters of our AcceptChannel (the funding amount without the reserve, for CKB).
 */
export function acceptTerms(
  ch0: Channel,
  r: AcceptRequest,
  ctx: { defaultShutdownScript: ccc.ScriptLike; minTlcExpiryDelta?: bigint },
): { local: Pick<PartyParams, 'reserve' | 'shutdownScript'>; params: (ch: Channel) => AcceptParams } {
  const shutdown = ccc.Script.from(r.shutdownScript ?? ctx.defaultShutdownScript);
  const reserve = reserveFor(shutdown, ch0.udt ? toScript(ch0.udt) : null, ch0.rules ?? 'strand');
  const minimum = reserve > SIDE_FLOOR ? reserve : SIDE_FLOOR;
  if (!ch0.udt && r.fundingAmount < minimum) {
    throw new ChannelError(
      'InvalidParameter',
      `Invalid parameter: The funding amount (${r.fundingAmount}) should be greater than or equal to ${minimum}`,
    );
  }
  if (r.tlcExpiryDelta !== undefined) checkExpiryDelta(r.tlcExpiryDelta, ctx.minTlcExpiryDelta);
  return {
    local: { reserve, shutdownScript: scriptData(shutdown) },
    params: (ch) => ({
      fundingAmount: ch.udt ? r.fundingAmount : r.fundingAmount - reserve,
      maxTlcValueInFlight: r.maxTlcValueInFlight,
      maxTlcNumberInFlight: r.maxTlcNumberInFlight,
      tlcExpiryDelta: r.tlcExpiryDelta,
      tlcMinValue: r.tlcMinValue,
      tlcFeeProportionalMillionths: r.tlcFeeProportionalMillionths,
    }),
  };
}

/** `tlc_expiry_delta` within fnn's bounds (2/3 of an epoch at least; see `codec/epoch-rules.ts`). */
export function checkExpiryDelta(delta: bigint, min = MIN_TLC_EXPIRY_DELTA): void {
  if (delta < min)
    throw new ChannelError(
      'InvalidParameter',
      `Invalid parameter: TLC expiry delta is too small, expect larger than ${min}, got ${delta}`,
    );
  if (delta > MAX_TLC_EXPIRY_LIMIT)
    throw new ChannelError(
      'InvalidParameter',
      `Invalid parameter: TLC expiry delta is too large, expected to be smaller than ${MAX_TLC_EXPIRY_LIMIT}, got ${delta}`,
    );
}

/**
 * What we put into a channel the peer opens, accepted without asking the operator, or null to
 * wait for `accept_channel`. As fnn: a CKB channel when the opener's amount (its reserve aside)
 * meets `minCkbFundingAmount` and `ckbFundingAmount` covers our reserve (we add it less the
 * reserve); a token channel when the whitelist gives the token an `auto_accept_amount` the
 * opener's tokens meet (we add no tokens, only our reserve).
 */
export function autoAcceptFunding(
  openerAmount: bigint,
  p: {
    minCkbFundingAmount: bigint;
    ckbFundingAmount: bigint;
    reserve: bigint;
    /** Token channels: the whitelist's `auto_accept_amount` (null: never); undefined for CKB. */
    udtMinimum?: bigint | null;
  },
): bigint | null {
  if (p.udtMinimum !== undefined) return p.udtMinimum !== null && openerAmount >= p.udtMinimum ? 0n : null;
  const enough =
    openerAmount >= p.minCkbFundingAmount && p.ckbFundingAmount > 0n && p.ckbFundingAmount >= p.reserve;
  return enough ? p.ckbFundingAmount - p.reserve : null;
}
