/** Opening a channel: our OpenChannel, checking and taking the peer's, and our AcceptChannel. */
import type { ccc } from '@ckb-ccc/core';
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import { ChannelError } from './errors.ts';
import { emptyFnn, fnnOf, freshUse, isFnn } from './fnn-nonces.ts';
import { type ChannelKeys, commitmentPoint, deriveChannelKeys, finalChannelId, keysOf } from './keys.ts';
import type { ChannelRules } from './reserve.ts';
import { cellDepData, nonceData, scriptData, toScript } from './script-data.ts';
import {
  type CellDepData,
  type Channel,
  type Hex,
  type PartyParams,
  type ScriptData,
  seenKey,
} from './state.ts';
import { freshNonce, keyNonce, type MachineEnv, type Step } from './step.ts';
import { firstRemotePoints } from './tlc-keys.ts';
import type { AcceptChannel, OpenChannel } from './wire.ts';

const b = (h: string) => hexToBytes(h);
const h = (x: Uint8Array) => bytesToHex(x);

export interface OpenParams {
  /** The whitelisted UDT's cell deps (UDT channels). */
  udtCellDeps?: ccc.CellDepLike[];
  peer: string;
  seed: Uint8Array;
  tempId: string;
  isPublic: boolean;
  fundingAmount: bigint;
  reserve: bigint;
  shutdownScript: ScriptData;
  udt: ScriptData | null;
  fundingFeeRate: bigint;
  commitmentFeeRate: bigint;
  delayEpoch: bigint;
  maxTlcValueInFlight: bigint;
  maxTlcNumberInFlight: bigint;
  tlcExpiryDelta: bigint;
  tlcMinValue: bigint;
  tlcFeeProportionalMillionths: bigint;
  /** External funding: the lock of the cells paying our part (`external-funding.ts`). */
  external?: { lock: ScriptData; cellDeps: CellDepData[] };
  /** The peer's channel rules (`reserve.ts`): 'fnn' puts the nonces on fnn's schedule. */
  rules?: ChannelRules;
}

/** A new channel's lifecycle fields: no TLC, no commitment, no funding tx yet. */
const NOTHING_YET = {
  tlcs: [],
  nextTlcId: { offered: 0n, received: 0n },
  commitmentNumbers: { local: 0n, remote: 0n },
  fundingTx: null,
  fundingTxHash: null,
  latestCommitmentTx: null,
  latestCommitmentTxHash: null,
  shutdownTxHash: null,
  failureDetail: null,
} as const satisfies Partial<Channel>;

/** The peer's side of a channel, from its OpenChannel or AcceptChannel. */
export function peerParams(m: OpenChannel | AcceptChannel): NonNullable<Channel['remote']> {
  return {
    fundingPubkey: h(m.fundingPubkey),
    tlcBasepoint: h(m.tlcBasepoint),
    fundingAmount: m.fundingAmount,
    reserve: m.reservedCkbAmount,
    shutdownScript: scriptData(m.shutdownScript),
    maxTlcValueInFlight: m.maxTlcValueInFlight,
    maxTlcNumberInFlight: m.maxTlcNumberInFlight,
    commitmentPoints: firstRemotePoints(m.firstPerCommitmentPoint, m.secondPerCommitmentPoint),
  };
}

/** Our first commitment and revocation nonces (Open/Accept), kept as the channel's rules say. */
function firstNonces(ch: Channel, env: MachineEnv): { ch: Channel; commit: Uint8Array; revoke: Uint8Array } {
  if (isFnn(ch)) {
    const commit = freshUse(ch, env);
    const revoke = freshUse(ch, env);
    const fnn = { ...fnnOf(ch), mine: [commit], current: commit.public, myRevoke: [revoke] };
    return { ch: { ...ch, fnn }, commit: b(commit.public), revoke: b(revoke.public) };
  }
  const commit = freshNonce(env, ch);
  const revoke = freshNonce(env, ch);
  const nonces = { ...ch.nonces, mine: [nonceData(commit), nonceData(revoke)] };
  return { ch: { ...ch, nonces }, commit: commit.public, revoke: revoke.public };
}

/** Our keys, commitment points and first nonces, as OpenChannel and AcceptChannel carry them. */
function ourKeysAndNonces(
  k: ChannelKeys,
  announce: { public: Uint8Array } | null,
  commit: Uint8Array,
  revoke: Uint8Array,
) {
  return {
    fundingPubkey: k.fundingPubkey,
    tlcBasepoint: k.tlcBasepoint,
    firstPerCommitmentPoint: commitmentPoint(k.commitmentSeed, 1n),
    secondPerCommitmentPoint: commitmentPoint(k.commitmentSeed, 2n),
    channelAnnouncementNonce: announce ? announce.public : null,
    nextCommitmentNonce: commit,
    nextRevocationNonce: revoke,
  };
}

/** The rules and nonce fields of a new channel (fnn mode: the peer's first nonces go to the ledger). */
function rulesFields(rules: ChannelRules | undefined, theirs?: { commit: Hex; revoke: Hex }) {
  if (rules !== 'fnn') return {};
  return { rules, fnn: emptyFnn(theirs?.commit, theirs?.revoke) };
}

/** The opener's new channel and its OpenChannel. `fundingAmount` excludes the reserve. */
export function openChannel(p: OpenParams, env: MachineEnv): Step {
  const k = deriveChannelKeys(p.seed);
  const announce = p.isPublic ? keyNonce(env, k) : null;
  const ch0: Channel = {
    ...rulesFields(p.rules),
    announcement: announce ? { myNonce: nonceData(announce) } : undefined,
    id: p.tempId,
    tempId: p.tempId,
    peer: p.peer,
    isAcceptor: false,
    isPublic: p.isPublic,
    state: 'NEGOTIATING_FUNDING',
    flags: ['OUR_INIT_SENT'],
    createdAt: env.now(),
    seed: h(p.seed),
    udt: p.udt,
    udtCellDeps: (p.udtCellDeps ?? []).map(cellDepData),
    fundingFeeRate: p.fundingFeeRate,
    commitmentFeeRate: p.commitmentFeeRate,
    delayEpoch: p.delayEpoch,
    tlcExpiryDelta: p.tlcExpiryDelta,
    tlcMinValue: p.tlcMinValue,
    tlcFeeProportionalMillionths: p.tlcFeeProportionalMillionths,
    enabled: true,
    local: {
      fundingPubkey: h(k.fundingPubkey),
      tlcBasepoint: h(k.tlcBasepoint),
      fundingAmount: p.fundingAmount,
      reserve: p.reserve,
      shutdownScript: p.shutdownScript,
      maxTlcValueInFlight: p.maxTlcValueInFlight,
      maxTlcNumberInFlight: p.maxTlcNumberInFlight,
    },
    nonces: { mine: [], theirs: [] },
    localBalance: p.fundingAmount,
    remoteBalance: 0n,
    ...NOTHING_YET,
    external: p.external ? { ...p.external, submitted: false } : undefined,
  };
  const { ch, commit, revoke } = firstNonces(ch0, env);
  const msg: OpenChannel = {
    chainHash: b(env.chainHash),
    channelId: b(p.tempId),
    fundingUdtTypeScript: p.udt ? toScript(p.udt) : null,
    fundingAmount: p.fundingAmount,
    shutdownScript: toScript(p.shutdownScript),
    reservedCkbAmount: p.reserve,
    fundingFeeRate: p.fundingFeeRate,
    commitmentFeeRate: p.commitmentFeeRate,
    maxTlcValueInFlight: p.maxTlcValueInFlight,
    maxTlcNumberInFlight: p.maxTlcNumberInFlight,
    commitmentDelayEpoch: p.delayEpoch,
    // Announcement signatures are not exchanged yet; a public flag travels without the nonce.
    ...ourKeysAndNonces(k, announce, commit, revoke),
    channelFlags: (p.isPublic ? 1 : 0) | (p.external ? 4 : 0),
  };
  return { ch, effects: [{ type: 'send', msg: { type: 'OpenChannel', value: msg } }] };
}

/** Checks an incoming OpenChannel; returns the error text when it must be refused. */
export function checkOpenChannel(m: OpenChannel, env: MachineEnv): string | null {
  if (h(m.chainHash) !== env.chainHash.toLowerCase()) return 'chain hash mismatch';
  if (((m.channelFlags & 1) === 1) !== (m.channelAnnouncementNonce !== null))
    return 'a public channel needs an announcement nonce, a private one must not have one';
  if ((m.channelFlags & 3) === 3) return 'a one-way channel cannot be public';
  if ((m.channelFlags & ~0x7) !== 0) return `undefined channel flags ${m.channelFlags}`;
  if (m.fundingFeeRate < 1000n) return 'Funding fee rate is less than 1000';
  if (m.commitmentFeeRate < 1000n) return 'Commitment fee rate is less than 1000';
  if (m.maxTlcNumberInFlight > 253n)
    return `Max TLC number in flight ${m.maxTlcNumberInFlight} is greater than the system maximal value 253`;
  const epochs = m.commitmentDelayEpoch & 0xff_ffffn;
  if (epochs < 1n || epochs > 84n) return `Commitment delay epoch ${m.commitmentDelayEpoch} is out of range`;
  if (m.reservedCkbAmount < 62n * 100_000_000n) return 'reserved CKB amount too small';
  return null;
}

/** The acceptor's channel, created from OpenChannel (not yet accepted). */
export function receiveOpen(
  m: OpenChannel,
  a: {
    peer: string;
    seed: Uint8Array;
    shutdownScript: ScriptData;
    reserve: bigint;
    udtCellDeps?: ccc.CellDepLike[];
    rules?: ChannelRules;
  },
  env: MachineEnv,
  defaults: { tlcExpiryDelta: bigint; tlcMinValue: bigint; tlcFeeProportionalMillionths: bigint },
): Channel {
  const k = deriveChannelKeys(a.seed);
  const fnn = a.rules === 'fnn';
  return {
    ...rulesFields(a.rules, { commit: h(m.nextCommitmentNonce), revoke: h(m.nextRevocationNonce) }),
    id: h(m.channelId),
    tempId: h(m.channelId),
    peer: a.peer,
    isAcceptor: true,
    isPublic: (m.channelFlags & 1) === 1,
    announcement: m.channelAnnouncementNonce ? { theirNonce: h(m.channelAnnouncementNonce) } : undefined,
    state: 'NEGOTIATING_FUNDING',
    flags: ['THEIR_INIT_SENT'],
    createdAt: env.now(),
    seed: h(a.seed),
    udt: m.fundingUdtTypeScript ? scriptData(m.fundingUdtTypeScript) : null,
    udtCellDeps: (a.udtCellDeps ?? []).map(cellDepData),
    fundingFeeRate: m.fundingFeeRate,
    commitmentFeeRate: m.commitmentFeeRate,
    delayEpoch: m.commitmentDelayEpoch,
    tlcExpiryDelta: defaults.tlcExpiryDelta,
    tlcMinValue: defaults.tlcMinValue,
    tlcFeeProportionalMillionths: defaults.tlcFeeProportionalMillionths,
    enabled: true,
    local: {
      fundingPubkey: h(k.fundingPubkey),
      tlcBasepoint: h(k.tlcBasepoint),
      fundingAmount: 0n,
      reserve: a.reserve,
      shutdownScript: a.shutdownScript,
      maxTlcValueInFlight: (1n << 128n) - 1n,
      maxTlcNumberInFlight: 125n,
    },
    remote: peerParams(m),
    nonces: fnn
      ? { mine: [], theirs: [] }
      : {
          mine: [],
          theirs: [h(m.nextCommitmentNonce), h(m.nextRevocationNonce)],
          seen: [seenKey(h(m.nextCommitmentNonce)), seenKey(h(m.nextRevocationNonce))],
        },
    localBalance: 0n,
    remoteBalance: m.fundingAmount,
    ...NOTHING_YET,
    external: (m.channelFlags & 4) !== 0 ? { submitted: false } : undefined,
  };
}

export interface AcceptParams {
  /** Our contribution excluding the reserve. */
  fundingAmount: bigint;
  shutdownScript?: ScriptData;
  maxTlcValueInFlight?: bigint;
  maxTlcNumberInFlight?: bigint;
  tlcExpiryDelta?: bigint;
  tlcMinValue?: bigint;
  tlcFeeProportionalMillionths?: bigint;
}

/** Accepting: AcceptChannel goes out, both sides move to the final channel id. */
export function acceptChannel(ch0: Channel, p: AcceptParams, env: MachineEnv): Step {
  if (!ch0.isAcceptor || ch0.state !== 'NEGOTIATING_FUNDING' || !ch0.remote)
    throw new ChannelError('ChannelNotFound', `No channel with temp id Hash256(${ch0.tempId}) found`, {
      channelId: ch0.tempId,
    });
  const k = keysOf(ch0);
  const local: PartyParams = {
    ...ch0.local,
    fundingAmount: p.fundingAmount,
    shutdownScript: p.shutdownScript ?? ch0.local.shutdownScript,
    maxTlcValueInFlight: p.maxTlcValueInFlight ?? ch0.local.maxTlcValueInFlight,
    maxTlcNumberInFlight: p.maxTlcNumberInFlight ?? ch0.local.maxTlcNumberInFlight,
  };
  const finalId = h(finalChannelId(k.tlcBasepoint, b(ch0.remote.tlcBasepoint)));
  const announce = ch0.isPublic ? freshNonce(env, ch0) : null;
  const { ch: ch1, commit, revoke } = firstNonces(ch0, env);
  const ch: Channel = {
    ...ch1,
    announcement: announce ? { ...ch0.announcement, myNonce: nonceData(announce) } : undefined,
    id: finalId,
    local,
    localBalance: p.fundingAmount,
    tlcExpiryDelta: p.tlcExpiryDelta ?? ch0.tlcExpiryDelta,
    tlcMinValue: p.tlcMinValue ?? ch0.tlcMinValue,
    tlcFeeProportionalMillionths: p.tlcFeeProportionalMillionths ?? ch0.tlcFeeProportionalMillionths,
    state: 'COLLABORATING_FUNDING_TX',
    flags: ['AWAITING_REMOTE_TX_COLLABORATION_MSG'],
  };
  const msg: AcceptChannel = {
    channelId: b(ch0.tempId),
    fundingAmount: p.fundingAmount,
    shutdownScript: toScript(local.shutdownScript),
    reservedCkbAmount: local.reserve,
    maxTlcValueInFlight: local.maxTlcValueInFlight,
    maxTlcNumberInFlight: local.maxTlcNumberInFlight,
    ...ourKeysAndNonces(k, announce, commit, revoke),
  };
  return {
    ch,
    effects: [
      { type: 'renamed', from: ch0.tempId, to: finalId },
      { type: 'send', msg: { type: 'AcceptChannel', value: msg } },
    ],
  };
}
