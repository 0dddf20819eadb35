/**
 * The pure channel state machine: (channel, event) → new channel + effects. No I/O: the shell
 * (`service.ts`) persists the new state, then performs the effects (sending messages, funding
 * through the wallet, broadcasting, watching the chain) and feeds their results back as events.
 *
 * Opening, as the reference runs it (`fiber-channel-protocol.md` §1 happy path):
 * OpenChannel → AcceptChannel → TxUpdate (opener's part) → TxUpdate (final) + TxComplete ×2 →
 * CommitmentSigned ×2 → TxSignatures ×2 (the side contributing less first) → 4 confirmations →
 * ChannelReady ×2 → CHANNEL_READY.
 *
 * Nonces: see `musig.ts`. Open/Accept and TxComplete advertise nonces into our pool (the peer's
 * `theirs`); CommitmentSigned and RevokeAndAck carry the first signer's deterministic nonce. Every
 * secret nonce leaves the pool (and the store) when used. After each completion we advertise a
 * fresh one with a TxComplete (a Strand extension outside the funding collaboration). With a peer
 * on fnn's rules (`ch.rules` 'fnn'), nonces follow fnn's schedule instead, under a two-use ledger
 * (`fnn-nonces.ts`, `fnn-revoke.ts`, docs/nonces.md).
 */
import { ccc } from '@ckb-ccc/core';
import { bytesToHex, hexToBytes } from '../codec/hex.ts';
import { blake160 } from '../crypto/hash.ts';
import { onAnnouncementSignatures, signAnnouncement } from './announce.ts';
import {
  afterPendingResolved,
  onCloseConfirmed,
  onClosingSigned,
  onShutdown,
  type ShutdownCommand,
  startShutdown,
} from './close.ts';
import { ChannelError } from './errors.ts';
import {
  awaitExternalFunding,
  isAwaitingExternalFunding,
  onExternalTxUpdate,
  recordFunderInputs,
  submitSignedFunding,
} from './external-funding.ts';
import {
  advertiseCommitment,
  emptyFnn,
  fnnOf,
  freshUse,
  isFnn,
  promote,
  useCommitmentNonce,
} from './fnn-nonces.ts';
import { commitmentPoint, deriveChannelKeys, finalChannelId, keysOf } from './keys.ts';
import {
  complete,
  type NoncePair,
  newNonce,
  SignatureError,
  signFirst,
  signWithNonce,
  sorted2,
  verifyPartial,
} from './musig.ts';
import { guardOutdated, onReadyAbort } from './outdated.ts';
import { onReestablish } from './reestablish.ts';
import type { ChannelRules } from './reserve.ts';
import {
  type CellDepData,
  type Channel,
  type Hex,
  hasFlag,
  type Nonce,
  type PartyParams,
  type ScriptData,
  withFlag,
} from './state.ts';
import {
  type AddTlcCommand,
  addTheirs,
  addTlc,
  onAddTlc,
  onCommitmentSignedReady,
  onNonceAdvert,
  onRemoveTlc,
  onRevokeAndAck,
  type RemoveReason,
  removeTlc,
  signCommitment,
  type TlcCommand,
  type TlcNotice,
  type TlcOutcome,
  tlcBatch,
} from './tlc.ts';
import { firstRemotePoints, tlcPubkeys } from './tlc-keys.ts';
import {
  commitmentLockArgs,
  commitmentTx,
  commitmentTxSize,
  feeOf,
  fundingLockScript,
  fundingWitness,
  le128,
  type ScriptInfo,
  settlementScript,
  txMessage,
} from './tx.ts';
import type { AcceptChannel, ChannelMessage, OpenChannel } from './wire.ts';

export { ChannelError } from './errors.ts';

export interface MachineEnv {
  chainHash: string;
  fundingLock: ScriptInfo;
  commitmentLock: ScriptInfo;
  now(): number;
}

export type Effect =
  | { type: 'send'; msg: ChannelMessage }
  /** Add our funding to `tx` (opener: a fresh tx whose output 0 is the funding cell). */
  | { type: 'fund'; tx: ccc.Transaction; contribution: bigint; udtContribution: bigint }
  /** Sign our inputs of the funding tx; `broadcast` when we are the second signer. */
  | { type: 'signFunding'; tx: ccc.Transaction; broadcast: boolean }
  | { type: 'watchFunding'; txHash: string }
  | { type: 'renamed'; from: string; to: string }
  /** Send a transaction (a commitment needs the funding lock's cell deps added first). */
  | { type: 'broadcast'; tx: ccc.Transaction; withFundingDeps?: boolean }
  | { type: 'watchClose'; txHash: string }
  /** Our commitment is on chain: settle our share once the delay has passed. */
  | { type: 'settleAfterDelay' }
  /** A public channel is ready: the shell computes the announcement digest and our node signature. */
  | { type: 'announce' }
  | {
      type: 'publishAnnouncement';
      localNodeSignature: Uint8Array;
      remoteNodeSignature: Uint8Array;
      ckbSignature: Uint8Array;
    }
  /** A TLC round finished: tell the payments layer. */
  | { type: 'tlc'; notice: TlcNotice }
  | { type: 'failed'; reason: string }
  /** Something the operator must know (an outdated channel state): logged as an error. */
  | { type: 'alarm'; reason: string }
  /** A peer's request the machine ignores on purpose (and why): logged as a warning. */
  | { type: 'warn'; reason: string };

export type Event =
  | { type: 'peer'; msg: ChannelMessage }
  | { type: 'funded'; tx: ccc.Transaction }
  | { type: 'fundingSigned'; tx: ccc.Transaction }
  | { type: 'fundingConfirmed' }
  | { type: 'fundingFailed'; reason: string }
  | { type: 'shutdown'; cmd: ShutdownCommand }
  | { type: 'addTlc'; cmd: AddTlcCommand }
  | { type: 'removeTlc'; id: bigint; reason: RemoveReason }
  /** TLC commands that waited for a round to end: the updates of the next round (`tlcBatch`). */
  | { type: 'tlcBatch'; cmds: TlcCommand[] }
  | { type: 'signCommitment' }
  | { type: 'closeConfirmed' }
  | { type: 'settled'; txHash: string }
  | { type: 'announcementDigest'; digest: Uint8Array; nodeSignature: Uint8Array }
  /** The funding cell was spent by a commitment that is not ours: the peer force-closed. */
  | { type: 'remoteCommitment'; txHash: string }
  /** `submit_signed_funding_tx` (external funding; `sighashCodeHash` lets the funder's signature be checked). */
  | { type: 'submitFunding'; tx: ccc.Transaction; sighashCodeHash?: string };

export interface Step {
  ch: Channel;
  effects: Effect[];
  /** A `tlcBatch`: what became of each of its commands, in order. */
  outcomes?: TlcOutcome[];
}

const b = (h: string) => hexToBytes(h);
const h = (x: Uint8Array) => bytesToHex(x);

export function scriptData(s: ccc.ScriptLike): ScriptData {
  const x = ccc.Script.from(s);
  return { codeHash: x.codeHash, hashType: x.hashType as ScriptData['hashType'], args: x.args };
}
export function cellDepData(d: ccc.CellDepLike): CellDepData {
  const x = ccc.CellDep.from(d);
  return {
    outPoint: { txHash: x.outPoint.txHash, index: String(x.outPoint.index) },
    depType: x.depType as CellDepData['depType'],
  };
}

export function toScript(s: ScriptData): ccc.Script {
  return ccc.Script.from(s);
}

export function nonceData(n: { secret: Uint8Array; public: Uint8Array }): Nonce {
  return { secret: h(n.secret), public: h(n.public) };
}

// ---- opening -----------------------------------------------------------------------------------

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

/** Our first commitment and revocation nonces (Open/Accept), kept as the channel's rules say. */
function firstNonces(ch: Channel): { ch: Channel; commit: Uint8Array; revoke: Uint8Array } {
  if (isFnn(ch)) {
    const commit = freshUse(ch);
    const revoke = freshUse(ch);
    const fnn = { ...fnnOf(ch), mine: [commit], current: commit.public, myRevoke: [revoke] };
    return { ch: { ...ch, fnn }, commit: b(commit.public), revoke: b(revoke.public) };
  }
  const k = keysOf(ch);
  const commit = newNonce(k.fundingPubkey, k.fundingKey);
  const revoke = newNonce(k.fundingPubkey, k.fundingKey);
  const nonces = { ...ch.nonces, mine: [nonceData(commit), nonceData(revoke)] };
  return { ch: { ...ch, nonces }, commit: commit.public, revoke: revoke.public };
}

/** The rules and nonce fields of a new channel (fnn mode: the peer's first nonces go to the ledger). */
function rulesFields(rules: ChannelRules | undefined, theirs?: { commit: Hex; revoke: Hex }) {
  if (rules !== 'fnn') return {};
  return { rules, fnn: emptyFnn(theirs?.commit, theirs?.revoke) };
}

/** The opener's new channel and its OpenChannel. `fundingAmount` excludes the reserve. */
export function openChannel(p: OpenParams, env: MachineEnv): Step {
  const k = deriveChannelKeys(p.seed);
  const announce = p.isPublic ? newNonce(k.fundingPubkey, k.fundingKey) : null;
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
    tlcs: [],
    nextTlcId: { offered: 0n, received: 0n },
    commitmentNumbers: { local: 0n, remote: 0n },
    fundingTx: null,
    fundingTxHash: null,
    latestCommitmentTx: null,
    latestCommitmentTxHash: null,
    shutdownTxHash: null,
    failureDetail: null,
    external: p.external ? { ...p.external, submitted: false } : undefined,
  };
  const { ch, commit, revoke } = firstNonces(ch0);
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
    fundingPubkey: k.fundingPubkey,
    tlcBasepoint: k.tlcBasepoint,
    firstPerCommitmentPoint: commitmentPoint(k.commitmentSeed, 1n),
    secondPerCommitmentPoint: commitmentPoint(k.commitmentSeed, 2n),
    // Announcement signatures are not exchanged yet; a public flag travels without the nonce.
    channelAnnouncementNonce: announce ? announce.public : null,
    nextCommitmentNonce: commit,
    nextRevocationNonce: revoke,
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
    remote: {
      fundingPubkey: h(m.fundingPubkey),
      tlcBasepoint: h(m.tlcBasepoint),
      fundingAmount: m.fundingAmount,
      reserve: m.reservedCkbAmount,
      shutdownScript: scriptData(m.shutdownScript),
      maxTlcValueInFlight: m.maxTlcValueInFlight,
      maxTlcNumberInFlight: m.maxTlcNumberInFlight,
      commitmentPoints: firstRemotePoints(m.firstPerCommitmentPoint, m.secondPerCommitmentPoint),
    },
    nonces: fnn
      ? { mine: [], theirs: [] }
      : {
          mine: [],
          theirs: [h(m.nextCommitmentNonce), h(m.nextRevocationNonce)],
          seen: [h(m.nextCommitmentNonce), h(m.nextRevocationNonce)],
        },
    localBalance: 0n,
    remoteBalance: m.fundingAmount,
    tlcs: [],
    nextTlcId: { offered: 0n, received: 0n },
    commitmentNumbers: { local: 0n, remote: 0n },
    fundingTx: null,
    fundingTxHash: null,
    latestCommitmentTx: null,
    latestCommitmentTxHash: null,
    shutdownTxHash: null,
    failureDetail: null,
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
export function acceptChannel(ch0: Channel, p: AcceptParams): Step {
  if (!ch0.isAcceptor || ch0.state !== 'NEGOTIATING_FUNDING' || !ch0.remote)
    throw new ChannelError(`No channel with temp id Hash256(${ch0.tempId}) found`);
  const k = keysOf(ch0);
  const local: PartyParams = {
    ...ch0.local,
    fundingAmount: p.fundingAmount,
    shutdownScript: p.shutdownScript ?? ch0.local.shutdownScript,
    maxTlcValueInFlight: p.maxTlcValueInFlight ?? ch0.local.maxTlcValueInFlight,
    maxTlcNumberInFlight: p.maxTlcNumberInFlight ?? ch0.local.maxTlcNumberInFlight,
  };
  const finalId = h(finalChannelId(k.tlcBasepoint, b(ch0.remote.tlcBasepoint)));
  const announce = ch0.isPublic ? newNonce(k.fundingPubkey, k.fundingKey) : null;
  const { ch: ch1, commit, revoke } = firstNonces(ch0);
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
    fundingPubkey: k.fundingPubkey,
    tlcBasepoint: k.tlcBasepoint,
    firstPerCommitmentPoint: commitmentPoint(k.commitmentSeed, 1n),
    secondPerCommitmentPoint: commitmentPoint(k.commitmentSeed, 2n),
    channelAnnouncementNonce: announce ? announce.public : null,
    nextCommitmentNonce: commit,
    nextRevocationNonce: revoke,
  };
  return {
    ch,
    effects: [
      { type: 'renamed', from: ch0.tempId, to: finalId },
      { type: 'send', msg: { type: 'AcceptChannel', value: msg } },
    ],
  };
}

// ---- the funding cell and commitments ----------------------------------------------------------

function fundingLock(ch: Channel, env: MachineEnv): ccc.Script {
  if (!ch.remote) throw new ChannelError('no remote parameters');
  return fundingLockScript(env.fundingLock, b(ch.local.fundingPubkey), b(ch.remote.fundingPubkey));
}

/** Cell deps of a funding-cell spend: the funding lock's, plus the UDT's for a UDT channel. */
export function channelDeps(ch: Channel, env: MachineEnv): ccc.CellDep[] {
  return [...env.fundingLock.cellDeps, ...(ch.udtCellDeps ?? [])].map((d) => ccc.CellDep.from(d));
}

export function totalCapacity(ch: Channel): bigint {
  const r = ch.remote as PartyParams;
  return ch.udt
    ? ch.local.reserve + r.reserve
    : ch.local.fundingAmount + ch.local.reserve + r.fundingAmount + r.reserve;
}

/** The commitment held by us (`forRemote` false) or by the peer, unsigned. */
export function buildCommitment(ch: Channel, forRemote: boolean, env: MachineEnv) {
  const r = ch.remote as PartyParams;
  const holder = forRemote ? { p: r, balance: ch.remoteBalance } : { p: ch.local, balance: ch.localBalance };
  const other = forRemote ? { p: ch.local, balance: ch.localBalance } : { p: r, balance: ch.remoteBalance };
  const withReserve = (x: typeof holder) => (ch.udt ? x.balance : x.balance + x.p.reserve);
  // Pending TLCs: first those the holder offered, then the other's, each by id.
  const pending = ch.tlcs.filter((t) => !t.removal);
  const holderOffered = (t: (typeof pending)[number]) => t.offered !== forRemote;
  const ordered = [
    ...pending.filter(holderOffered).sort((x, y) => (x.id < y.id ? -1 : 1)),
    ...pending.filter((t) => !holderOffered(t)).sort((x, y) => (x.id < y.id ? -1 : 1)),
  ];
  // Settlement keys: the untweaked base points; TLC keys: the TLC's own (`tlc-keys.ts`).
  const holderKeyHash = blake160(b(holder.p.tlcBasepoint));
  const otherKeyHash = blake160(b(other.p.tlcBasepoint));
  const script = settlementScript(
    ordered.map((t) => {
      const k = tlcPubkeys(ch, t);
      return {
        offeredByHolder: holderOffered(t),
        hashAlgorithm: t.hashAlgorithm,
        amount: t.amount,
        paymentHash: b(t.paymentHash),
        holderKeyHash: blake160(forRemote ? k.remote : k.local),
        otherKeyHash: blake160(forRemote ? k.local : k.remote),
        expiry: t.expiry,
      };
    }),
    {
      holderPkh: holderKeyHash,
      holderAmount: withReserve(holder),
      otherPkh: otherKeyHash,
      otherAmount: withReserve(other),
    },
  );
  const version = forRemote ? ch.commitmentNumbers.local : ch.commitmentNumbers.remote;
  const revocationKeys = [b(other.p.fundingPubkey), b(holder.p.fundingPubkey)];
  const args = commitmentLockArgs(revocationKeys, ch.delayEpoch, version, script);
  const fee = feeOf(
    ch.commitmentFeeRate,
    commitmentTxSize(channelDeps(ch, env).length, env.commitmentLock, ch.udt ? toScript(ch.udt) : null),
  );
  const tx = commitmentTx({
    fundingOutPoint: { txHash: ch.fundingTxHash as string, index: 0 },
    commitmentLock: env.commitmentLock,
    args,
    capacity: totalCapacity(ch) - fee,
    udt: ch.udt
      ? {
          script: toScript(ch.udt),
          total: ch.localBalance + ch.remoteBalance + pending.reduce((x, t) => x + t.amount, 0n),
        }
      : null,
  });
  return { tx, script, args, version, revocationKeys };
}

export function fundingKeys(ch: Channel): Uint8Array[] {
  return sorted2(b(ch.local.fundingPubkey), b((ch.remote as PartyParams).fundingPubkey));
}

/**
 * Our CommitmentSigned. Strand: we sign the peer's commitment first, with a deterministic nonce.
 * fnn: with our current nonce (a counted use) and the peer's, advertising our next one.
 */
export function commitmentSigned(ch: Channel, env: MachineEnv): { ch: Channel; msg: ChannelMessage } {
  const { tx } = buildCommitment(ch, true, env);
  const msg = (c: Channel, partial: Uint8Array, nonce: Uint8Array): { ch: Channel; msg: ChannelMessage } => ({
    ch: c,
    msg: {
      type: 'CommitmentSigned',
      value: { channelId: b(ch.id), fundingTxPartialSignature: partial, nextCommitmentNonce: nonce },
    },
  });
  if (isFnn(ch)) {
    const used = signFunding(ch, txMessage(tx));
    const next = advertiseCommitment(used.ch);
    return msg(next.ch, used.value, next.nonce);
  }
  const theirNonce = ch.nonces.theirs[0];
  if (!theirNonce) throw new ChannelError('no nonce of the peer left');
  const s = signFirst(keysOf(ch).fundingKey, b(theirNonce), fundingKeys(ch), txMessage(tx));
  return msg({ ...ch, nonces: { ...ch.nonces, theirs: ch.nonces.theirs.slice(1) } }, s.partial, s.nonce);
}

/**
 * fnn mode: our partial signature of a funding-cell spend (the peer's commitment, the shutdown
 * tx), with our current nonce and the peer's — one counted use of ours.
 */
export function signFunding(ch: Channel, msg: Uint8Array): { ch: Channel; value: Uint8Array } {
  const k = keysOf(ch);
  return useCommitmentNonce(ch, (n) =>
    signWithNonce({
      mySecret: k.fundingKey,
      myPubkey: k.fundingPubkey,
      myNonce: n,
      theirPubkey: b((ch.remote as PartyParams).fundingPubkey),
      theirNonce: b(fnnOf(ch).theirs),
      keys: fundingKeys(ch),
      msg,
    }),
  );
}

/**
 * Completes our commitment with the peer's partial signature. Strand: drops our nonce; the peer's
 * came with its signature. fnn: a counted use of our current nonce, paired with the peer's
 * current one; the nonce in the message is the peer's next.
 */
export function completeOwnCommitment(
  ch0: Channel,
  partial: Uint8Array,
  nonceInMessage: Uint8Array,
  env: MachineEnv,
): Channel {
  const k = keysOf(ch0);
  const { tx } = buildCommitment(ch0, false, env);
  const session = (myNonce: NoncePair, theirNonce: Uint8Array) =>
    complete({
      mySecret: k.fundingKey,
      myPubkey: k.fundingPubkey,
      myNonce,
      theirPubkey: b((ch0.remote as PartyParams).fundingPubkey),
      theirNonce,
      theirPartial: partial,
      keys: fundingKeys(ch0),
      msg: txMessage(tx),
    });
  let ch: Channel;
  let sig: Uint8Array;
  try {
    if (isFnn(ch0)) return ownCommitmentSignedByPeer(ch0, tx, partial, nonceInMessage, env);
    {
      const my = ch0.nonces.mine[0];
      if (!my) throw new ChannelError('no nonce of ours left');
      sig = session({ secret: b(my.secret), public: b(my.public) }, nonceInMessage);
      ch = { ...ch0, nonces: { ...ch0.nonces, mine: ch0.nonces.mine.slice(1) } };
    }
  } catch (e) {
    if (e instanceof SignatureError) throw new ChannelError('invalid commitment signature from the peer');
    throw e;
  }
  tx.witnesses = [fundingWitness(k.fundingPubkey, b((ch.remote as PartyParams).fundingPubkey), sig)];
  // Stored ready to broadcast: with the funding lock's deps (the signature does not cover them,
  // the tx hash does — so this is the hash the chain will know).
  tx.cellDeps = channelDeps(ch, env);
  return {
    ...ch,
    latestCommitmentTx: h(tx.toBytes()),
    latestCommitmentTxHash: tx.hash(),
  };
}

/**
 * fnn mode: the peer's partial signature of our new commitment is verified and kept; our own
 * partial waits until the commitment is to be broadcast (`completeForBroadcast`), so that the
 * nonce spends a use on it only then. The nonce in the message is the peer's next.
 */
function ownCommitmentSignedByPeer(
  ch: Channel,
  tx: ccc.Transaction,
  partial: Uint8Array,
  nonceInMessage: Uint8Array,
  env: MachineEnv,
): Channel {
  const f = fnnOf(ch);
  const k = keysOf(ch);
  try {
    verifyPartial({
      myPubkey: k.fundingPubkey,
      myNonce: b(f.current),
      theirPubkey: b((ch.remote as PartyParams).fundingPubkey),
      theirNonce: b(f.theirs),
      theirPartial: partial,
      keys: fundingKeys(ch),
      msg: txMessage(tx),
    });
  } catch (e) {
    if (e instanceof SignatureError) throw new ChannelError('invalid commitment signature from the peer');
    throw e;
  }
  tx.cellDeps = channelDeps(ch, env);
  const own = { partial: h(partial), myNonce: f.current, theirNonce: f.theirs };
  // The nonce the replaced commitment waited on (advertised before the current one) goes.
  const i = f.mine.findIndex((n) => n.public === f.current);
  return {
    ...ch,
    fnn: { ...f, mine: i > 0 ? f.mine.slice(i) : f.mine, own, theirs: h(nonceInMessage) },
    latestCommitmentTx: h(tx.toBytes()),
    latestCommitmentTxHash: tx.hash(),
  };
}

/**
 * fnn mode, to broadcast our latest commitment: our partial signature completes the peer's (a
 * counted use of the nonce it waits on; refused when that nonce already signed twice).
 */
export function completeForBroadcast(ch: Channel): { ch: Channel; tx: ccc.Transaction } {
  if (!ch.latestCommitmentTx) throw new ChannelError('Commitment transaction not found');
  const tx = ccc.Transaction.fromBytes(ch.latestCommitmentTx);
  const own = isFnn(ch) ? fnnOf(ch).own : null;
  if (!own) return { ch, tx };
  const k = keysOf(ch);
  const remotePk = b((ch.remote as PartyParams).fundingPubkey);
  const unsigned = tx.clone();
  unsigned.cellDeps = [];
  const used = useCommitmentNonce(
    ch,
    (n) =>
      complete({
        mySecret: k.fundingKey,
        myPubkey: k.fundingPubkey,
        myNonce: n,
        theirPubkey: remotePk,
        theirNonce: b(own.theirNonce),
        theirPartial: b(own.partial),
        keys: fundingKeys(ch),
        msg: txMessage(unsigned),
      }),
    own.myNonce,
  );
  tx.witnesses = [fundingWitness(k.fundingPubkey, remotePk, used.value)];
  const f = fnnOf(used.ch);
  return { ch: { ...used.ch, fnn: { ...f, own: null }, latestCommitmentTx: h(tx.toBytes()) }, tx };
}

// ---- the funding transaction -------------------------------------------------------------------

function sameOutput(a: ccc.CellOutput | undefined, b2: ccc.CellOutput | undefined) {
  return !!a && !!b2 && Buffer.compare(a.toBytes(), b2.toBytes()) === 0;
}

/** Checks the peer's version of the funding tx against ours (§4.3). */
function checkTxUpdate(
  ch: Channel,
  prev: ccc.Transaction | null,
  next: ccc.Transaction,
  env: MachineEnv,
): void {
  const lock = fundingLock(ch, env);
  const out0 = next.outputs[0];
  if (!out0?.lock.eq(lock)) throw new ChannelError('funding tx: output 0 is not the funding cell');
  if (!ch.udt && ccc.bytesFrom(next.outputsData[0] ?? '0x').length !== 0)
    throw new ChannelError('funding tx: output 0 has data');
  if (!ch.udt && out0.type) throw new ChannelError('funding tx: output 0 has a type script');
  if (
    ch.udt &&
    (!out0.type?.eq(toScript(ch.udt)) || ccc.bytesFrom(next.outputsData[0] ?? '0x').length !== 16)
  )
    throw new ChannelError('funding tx: output 0 is not a cell of the channel UDT');
  if (!prev) return;
  if (next.version !== prev.version) throw new ChannelError('funding tx: version changed');
  for (const [i, inp] of prev.inputs.entries())
    if (!next.inputs[i] || Buffer.compare(next.inputs[i].toBytes(), inp.toBytes()) !== 0)
      throw new ChannelError('funding tx: existing inputs changed');
  if (next.outputs.length < prev.outputs.length) throw new ChannelError('funding tx: outputs removed');
  for (let i = 1; i < prev.outputs.length; i++) {
    if (!sameOutput(prev.outputs[i], next.outputs[i]))
      throw new ChannelError('funding tx: our outputs changed');
    if (ccc.hexFrom(prev.outputsData[i] ?? '0x') !== ccc.hexFrom(next.outputsData[i] ?? '0x'))
      throw new ChannelError('funding tx: our output data changed');
  }
  for (const d of prev.cellDeps)
    if (!next.cellDeps.some((x) => x.eq(d))) throw new ChannelError('funding tx: cell deps removed');
}

/** Who sends TxSignatures first: the side contributing less; on a tie, the smaller funding key. */
export function signsFirst(ch: Channel): boolean {
  const r = ch.remote as PartyParams;
  if (ch.local.fundingAmount !== r.fundingAmount) return ch.local.fundingAmount < r.fundingAmount;
  return Buffer.compare(b(ch.local.fundingPubkey), b(r.fundingPubkey)) <= 0;
}

function setFundingTx(ch: Channel, tx: ccc.Transaction): Channel {
  return { ...ch, fundingTx: h(tx.toBytes()), fundingTxHash: tx.hash() };
}

export function fundingTxOf(ch: Channel): ccc.Transaction {
  if (!ch.fundingTx) throw new ChannelError('no funding transaction');
  return ccc.Transaction.fromBytes(ch.fundingTx);
}

/**
 * When both TxComplete are in: counters to 1/1, our CommitmentSigned goes out — unless the
 * opener's part is funded externally and not signed yet (then wait for it, `external-funding.ts`).
 */
export function maybeSignCommitment(ch0: Channel, env: MachineEnv): Step {
  if (!hasFlag(ch0, 'OUR_TX_COMPLETE_SENT') || !hasFlag(ch0, 'THEIR_TX_COMPLETE_SENT'))
    return { ch: ch0, effects: [] };
  if (ch0.external && !ch0.external.submitted) return awaitExternalFunding(ch0, env);
  const { ch, msg } = commitmentSigned(
    {
      ...ch0,
      state: 'SIGNING_COMMITMENT',
      flags: ['OUR_COMMITMENT_SIGNED_SENT'],
      commitmentNumbers: { local: 1n, remote: 1n },
    },
    env,
  );
  return { ch, effects: [{ type: 'send', msg }] };
}

function maybeTxSignatures(ch0: Channel): Step {
  if (!hasFlag(ch0, 'OUR_COMMITMENT_SIGNED_SENT') || !hasFlag(ch0, 'THEIR_COMMITMENT_SIGNED_SENT'))
    return { ch: ch0, effects: [] };
  const ch: Channel = { ...ch0, state: 'AWAITING_TX_SIGNATURES', flags: [] };
  if (!signsFirst(ch)) return { ch, effects: [] };
  return { ch, effects: [{ type: 'signFunding', tx: fundingTxOf(ch), broadcast: false }] };
}

// ---- the step function -------------------------------------------------------------------------

export function step(ch: Channel, ev: Event, env: MachineEnv): Step {
  if (ch.state === 'CLOSED' && ev.type !== 'settled') {
    if (ev.type === 'shutdown') throw new ChannelError('Messaging failed because channel is closed');
    // Refused with the state it is in (never a silent success).
    if (ev.type === 'submitFunding') return submitSignedFunding(ch, ev.tx, ev.sighashCodeHash, env);
    if (ev.type === 'tlcBatch') {
      const error = 'Messaging failed because channel is closed';
      return { ch, effects: [], outcomes: ev.cmds.map(() => ({ ok: false, error })) };
    }
    return { ch, effects: [] };
  }
  const guarded = guardOutdated(ch, ev);
  if (guarded) return guarded;
  // Shutting down: once both Shutdowns are in and the last pending TLC is resolved, ClosingSigned.
  return afterPendingResolved(dispatch(ch, ev, env), env);
}

function dispatch(ch: Channel, ev: Event, env: MachineEnv): Step {
  switch (ev.type) {
    case 'peer':
      return onPeer(ch, ev.msg, env);
    case 'funded':
      return onFunded(ch, ev.tx, env);
    case 'fundingSigned':
      return onFundingSigned(ch, ev.tx);
    case 'fundingConfirmed':
      return onConfirmed(ch);
    case 'fundingFailed':
      return fail(ch, ev.reason);
    case 'shutdown':
      return startShutdown(ch, ev.cmd, env);
    case 'addTlc':
      return addTlc(ch, ev.cmd, env);
    case 'removeTlc':
      return removeTlc(ch, ev.id, ev.reason, env);
    case 'tlcBatch':
      return tlcBatch(ch, ev.cmds, env);
    case 'signCommitment':
      return signCommitment(ch, env);
    case 'closeConfirmed':
      return onCloseConfirmed(ch);
    case 'announcementDigest':
      return signAnnouncement(ch, ev.digest, ev.nodeSignature);
    case 'remoteCommitment':
      if (ch.state !== 'CHANNEL_READY' && ch.state !== 'SHUTTING_DOWN') return { ch, effects: [] };
      return {
        ch: {
          ...ch,
          state: 'CLOSED',
          flags: [
            'UNCOOPERATIVE_REMOTE',
            'WAITING_ONCHAIN_SETTLEMENT',
            ...ch.flags.filter((f) => f === 'LOCAL_STATE_OUTDATED'),
          ],
          shutdownTxHash: ev.txHash,
          round: null,
        },
        effects: [{ type: 'settleAfterDelay' }],
      };
    case 'submitFunding':
      return submitSignedFunding(ch, ev.tx, ev.sighashCodeHash, env);
    case 'settled':
      return {
        ch: { ...ch, flags: ch.flags.filter((f) => f !== 'WAITING_ONCHAIN_SETTLEMENT') },
        effects: [],
      };
  }
}

export function fail(ch: Channel, reason: string): Step {
  const abort: Effect = {
    type: 'send',
    msg: { type: 'TxAbort', value: { channelId: b(ch.id), message: new TextEncoder().encode(reason) } },
  };
  return {
    ch: { ...ch, state: 'CLOSED', flags: ['FUNDING_ABORTED'], failureDetail: reason },
    effects: [abort, { type: 'failed', reason }],
  };
}

function onPeer(ch: Channel, msg: ChannelMessage, env: MachineEnv): Step {
  switch (msg.type) {
    case 'AcceptChannel':
      return onAccept(ch, msg.value, env);
    case 'TxUpdate':
      if (isAwaitingExternalFunding(ch)) return onExternalTxUpdate(ch, msg.value.tx, env);
      return onTxUpdate(ch, msg.value.tx, env);
    case 'TxComplete': {
      if (ch.state !== 'COLLABORATING_FUNDING_TX') {
        if (ch.state === 'NEGOTIATING_FUNDING') throw new ChannelError('unexpected TxComplete');
        return onNonceAdvert(ch, msg.value.nextCommitmentNonce);
      }
      const nonce = h(msg.value.nextCommitmentNonce);
      const withNonce = isFnn(ch) ? { ...ch, fnn: { ...fnnOf(ch), theirs: nonce } } : addTheirs(ch, [nonce]);
      const c = withFlag(withNonce, 'THEIR_TX_COMPLETE_SENT');
      return maybeSignCommitment(c, env);
    }
    case 'ReestablishChannel':
      return onReestablish(ch, msg.value);
    case 'AddTlc':
      return onAddTlc(ch, msg.value, env);
    case 'RemoveTlc':
      return onRemoveTlc(ch, msg.value);
    case 'RevokeAndAck':
      return onRevokeAndAck(ch, msg.value, env);
    case 'CommitmentSigned': {
      if (ch.state === 'CHANNEL_READY' || ch.state === 'SHUTTING_DOWN')
        return onCommitmentSignedReady(
          ch,
          msg.value.fundingTxPartialSignature,
          msg.value.nextCommitmentNonce,
          env,
        );
      if (ch.state !== 'SIGNING_COMMITMENT' && ch.state !== 'COLLABORATING_FUNDING_TX')
        throw new ChannelError(`unexpected CommitmentSigned in ${ch.state}`);
      if (ch.state === 'COLLABORATING_FUNDING_TX') {
        // The peer finished first: complete once our own TxComplete round is done.
        throw new ChannelError('CommitmentSigned before the funding collaboration completed');
      }
      const c = completeOwnCommitment(
        ch,
        msg.value.fundingTxPartialSignature,
        msg.value.nextCommitmentNonce,
        env,
      );
      // fnn: the peer signed before it saw our CommitmentSigned, and commits its nonce now.
      const c2 = isFnn(c) ? promote(c) : c;
      return maybeTxSignatures(withFlag(c2, 'THEIR_COMMITMENT_SIGNED_SENT'));
    }
    case 'TxSignatures':
      return onTxSignatures(ch, msg.value.witnesses);
    case 'ChannelReady': {
      if (ch.state !== 'AWAITING_CHANNEL_READY' && ch.state !== 'AWAITING_TX_SIGNATURES')
        throw new ChannelError(`unexpected ChannelReady in ${ch.state}`);
      return maybeReady(withFlag(ch, 'THEIR_CHANNEL_READY'));
    }
    case 'Shutdown':
      return onShutdown(ch, msg.value, env);
    case 'ClosingSigned':
      return onClosingSigned(ch, msg.value);
    case 'TxAbort':
      // After the funding, a TxAbort only matters as a peer's force-close request (`outdated.ts`).
      if (ch.state === 'CHANNEL_READY' || ch.state === 'SHUTTING_DOWN')
        return onReadyAbort(ch, msg.value.message);
      if (ch.state === 'AWAITING_CHANNEL_READY') return { ch, effects: [] };
      return {
        ch: {
          ...ch,
          state: 'CLOSED',
          flags: ['FUNDING_ABORTED'],
          failureDetail: new TextDecoder().decode(msg.value.message),
        },
        effects: [{ type: 'failed', reason: 'aborted by the peer' }],
      };
    case 'AnnouncementSignatures':
      return onAnnouncementSignatures(ch, msg.value);
    case 'UpdateTlcInfo':
    case 'TxInitRBF':
    case 'TxAckRBF':
      return { ch, effects: [] };
    default:
      throw new ChannelError(`${msg.type} is not handled in ${ch.state}`);
  }
}

function onAccept(ch0: Channel, m: AcceptChannel, env: MachineEnv): Step {
  if (ch0.isAcceptor || ch0.state !== 'NEGOTIATING_FUNDING')
    throw new ChannelError('unexpected AcceptChannel');
  if (m.reservedCkbAmount < 62n * 100_000_000n) throw new ChannelError('reserved CKB amount too small');
  const k = keysOf(ch0);
  const finalId = h(finalChannelId(k.tlcBasepoint, m.tlcBasepoint));
  const ch: Channel = {
    ...ch0,
    id: finalId,
    state: 'COLLABORATING_FUNDING_TX',
    flags: ['PREPARING_LOCAL_TX_COLLABORATION_MSG'],
    remote: {
      fundingPubkey: h(m.fundingPubkey),
      tlcBasepoint: h(m.tlcBasepoint),
      fundingAmount: m.fundingAmount,
      reserve: m.reservedCkbAmount,
      shutdownScript: scriptData(m.shutdownScript),
      maxTlcValueInFlight: m.maxTlcValueInFlight,
      maxTlcNumberInFlight: m.maxTlcNumberInFlight,
      commitmentPoints: firstRemotePoints(m.firstPerCommitmentPoint, m.secondPerCommitmentPoint),
    },
    remoteBalance: m.fundingAmount,
    announcement: ch0.isPublic
      ? { ...ch0.announcement, theirNonce: m.channelAnnouncementNonce ? h(m.channelAnnouncementNonce) : null }
      : undefined,
    ...(isFnn(ch0)
      ? {
          fnn: {
            ...fnnOf(ch0),
            theirs: h(m.nextCommitmentNonce),
            theirRevoke: [{ n: 2n, nonce: h(m.nextRevocationNonce) }],
          },
        }
      : {
          nonces: {
            ...ch0.nonces,
            theirs: [h(m.nextCommitmentNonce), h(m.nextRevocationNonce)],
            seen: [h(m.nextCommitmentNonce), h(m.nextRevocationNonce)],
          },
        }),
  };
  // Our part of the funding tx: output 0 = the funding cell holding our amount + reserve
  // (UDT: our reserve as capacity, our tokens as data).
  const c = contribution(ch);
  const tx = ccc.Transaction.from({
    version: 0,
    outputs: [{ lock: fundingLock(ch, env), capacity: c.ckb, type: ch.udt ? toScript(ch.udt) : undefined }],
    outputsData: [ch.udt ? le128(c.udt) : '0x'],
  });
  return {
    ch,
    effects: [
      { type: 'renamed', from: ch0.tempId, to: finalId },
      { type: 'fund', tx, contribution: c.ckb, udtContribution: c.udt },
    ],
  };
}

function onTxUpdate(ch: Channel, tx: ccc.Transaction, env: MachineEnv): Step {
  if (ch.state !== 'COLLABORATING_FUNDING_TX') throw new ChannelError(`unexpected TxUpdate in ${ch.state}`);
  const prev = ch.fundingTx ? fundingTxOf(ch) : null;
  checkTxUpdate(ch, prev, tx, env);
  const cap = tx.outputs[0]!.capacity;
  const tokens = ch.udt ? ccc.numLeFromBytes(ccc.bytesFrom(tx.outputsData[0] ?? '0x')) : 0n;
  if (ch.isAcceptor) {
    if (prev) throw new ChannelError('unexpected second TxUpdate');
    const theirs = contribution(ch, true);
    if (cap !== theirs.ckb || tokens !== theirs.udt)
      throw new ChannelError('funding tx: output 0 is not the opener amount');
    const c = setFundingTx({ ...ch, flags: ['PREPARING_LOCAL_TX_COLLABORATION_MSG'] }, tx);
    const mine = contribution(ch);
    return {
      ch: c,
      effects: [{ type: 'fund', tx, contribution: mine.ckb, udtContribution: mine.udt }],
    };
  }
  if (!holdsTotal(ch, tx)) throw new ChannelError('funding tx: output 0 does not hold the channel total');
  // Final version from the acceptor: we complete too.
  return completeCollaboration(setFundingTx(ch, tx));
}

/** What one side puts into the funding cell: capacity, and tokens for a UDT channel. */
function contribution(ch: Channel, remote = false): { ckb: bigint; udt: bigint } {
  const p = remote ? (ch.remote as PartyParams) : ch.local;
  return ch.udt ? { ckb: p.reserve, udt: p.fundingAmount } : { ckb: p.fundingAmount + p.reserve, udt: 0n };
}

function holdsTotal(ch: Channel, tx: ccc.Transaction): boolean {
  const out0 = tx.outputs[0];
  if (!out0 || out0.capacity !== totalCapacity(ch)) return false;
  if (!ch.udt) return true;
  const r = ch.remote as PartyParams;
  const data = ccc.bytesFrom(tx.outputsData[0] ?? '0x');
  return data.length === 16 && ccc.numLeFromBytes(data) === ch.local.fundingAmount + r.fundingAmount;
}

function completeCollaboration(ch0: Channel): Step {
  const { ch: c, nonce } = advertiseTxComplete(ch0);
  const ch = withFlag(c, 'OUR_TX_COMPLETE_SENT');
  return {
    ch,
    effects: [
      {
        type: 'send',
        msg: { type: 'TxComplete', value: { channelId: b(ch.id), nextCommitmentNonce: nonce } },
      },
    ],
  };
}

/**
 * Our TxComplete's nonce. Strand: one more for our pool (the close). fnn: the nonce the peer
 * commits on receipt and pairs with ours in the opening's commitments; it is current at once.
 */
function advertiseTxComplete(ch: Channel): { ch: Channel; nonce: Uint8Array } {
  if (isFnn(ch)) {
    const r = advertiseCommitment(ch);
    return { ch: promote(r.ch), nonce: r.nonce };
  }
  const k = keysOf(ch);
  const n = newNonce(k.fundingPubkey, k.fundingKey);
  return {
    ch: { ...ch, nonces: { ...ch.nonces, mine: [...ch.nonces.mine, nonceData(n)] } },
    nonce: n.public,
  };
}

function onFunded(ch: Channel, tx: ccc.Transaction, env: MachineEnv): Step {
  if (ch.state !== 'COLLABORATING_FUNDING_TX') return { ch, effects: [] };
  const withTx = setFundingTx(
    recordFunderInputs({ ...ch, flags: ['AWAITING_REMOTE_TX_COLLABORATION_MSG'] }, tx),
    tx,
  );
  const update: Effect = { type: 'send', msg: { type: 'TxUpdate', value: { channelId: b(ch.id), tx } } };
  if (!ch.isAcceptor) return { ch: withTx, effects: [update] };
  // The acceptor's version is final: send it and complete.
  if (!holdsTotal(ch, tx)) throw new ChannelError('funding tx does not hold the total');
  void env;
  const done = completeCollaboration(withTx);
  return { ch: done.ch, effects: [update, ...done.effects] };
}

function onTxSignatures(ch: Channel, witnesses: Uint8Array[]): Step {
  // The peer's reestablish sends its TxSignatures again (we may have missed them); once the funding
  // is fully signed here, that copy has nothing to add.
  if (ch.state === 'AWAITING_CHANNEL_READY' || ch.state === 'CHANNEL_READY') return { ch, effects: [] };
  if (ch.state !== 'AWAITING_TX_SIGNATURES') throw new ChannelError(`unexpected TxSignatures in ${ch.state}`);
  const tx = fundingTxOf(ch);
  if (witnesses.length < tx.inputs.length || witnesses.length > tx.inputs.length + 16)
    throw new ChannelError('TxSignatures: wrong number of witnesses');
  tx.witnesses = witnesses.map((w) => ccc.hexFrom(w));
  const c = withFlag(setFundingTx(ch, tx), 'THEIR_TX_SIGNATURES_SENT');
  if (hasFlag(ch, 'OUR_TX_SIGNATURES_SENT')) {
    // We signed first; the peer added its witnesses and broadcast.
    return toAwaitingReady(c);
  }
  return { ch: c, effects: [{ type: 'signFunding', tx, broadcast: false }] };
}

function onFundingSigned(ch: Channel, tx: ccc.Transaction): Step {
  if (ch.state !== 'AWAITING_TX_SIGNATURES') return { ch, effects: [] };
  const c = withFlag(setFundingTx(ch, tx), 'OUR_TX_SIGNATURES_SENT');
  const send: Effect = {
    type: 'send',
    msg: {
      type: 'TxSignatures',
      value: { channelId: b(ch.id), witnesses: tx.witnesses.map((w) => ccc.bytesFrom(w)) },
    },
  };
  if (hasFlag(c, 'THEIR_TX_SIGNATURES_SENT')) {
    const r = toAwaitingReady(c);
    return { ch: r.ch, effects: [send, ...r.effects] };
  }
  // The peer completes and broadcasts; should its answer be lost, the chain still tells us.
  return { ch: c, effects: [send, { type: 'watchFunding', txHash: c.fundingTxHash as string }] };
}

function toAwaitingReady(ch: Channel): Step {
  // A ChannelReady may already be in (the peer saw the confirmations first).
  const c: Channel = {
    ...ch,
    state: 'AWAITING_CHANNEL_READY',
    flags: ch.flags.filter((f) => f === 'THEIR_CHANNEL_READY'),
  };
  // Fully signed and persisted: both sides broadcast (a duplicate is harmless; either side alone
  // suffices if the other crashed right after persisting).
  return {
    ch: c,
    effects: [
      { type: 'broadcast', tx: fundingTxOf(c) },
      { type: 'watchFunding', txHash: c.fundingTxHash as string },
    ],
  };
}

function onConfirmed(ch0: Channel): Step {
  // Signed by us first, completed and broadcast by the peer whose TxSignatures we never got.
  const ch =
    ch0.state === 'AWAITING_TX_SIGNATURES' && hasFlag(ch0, 'OUR_TX_SIGNATURES_SENT')
      ? {
          ...ch0,
          state: 'AWAITING_CHANNEL_READY' as const,
          flags: ch0.flags.filter((f) => f === 'THEIR_CHANNEL_READY'),
        }
      : ch0;
  if (ch.state !== 'AWAITING_CHANNEL_READY' || hasFlag(ch, 'OUR_CHANNEL_READY'))
    return { ch: ch0, effects: [] };
  const c = withFlag(ch, 'OUR_CHANNEL_READY');
  const r = maybeReady(c);
  return {
    ch: r.ch,
    effects: [{ type: 'send', msg: { type: 'ChannelReady', value: { channelId: b(ch.id) } } }, ...r.effects],
  };
}

function maybeReady(ch: Channel): Step {
  if (!hasFlag(ch, 'OUR_CHANNEL_READY') || !hasFlag(ch, 'THEIR_CHANNEL_READY')) return { ch, effects: [] };
  const c: Channel = {
    ...ch,
    state: 'CHANNEL_READY',
    flags: [],
    commitmentNumbers: { local: ch.commitmentNumbers.local + 1n, remote: ch.commitmentNumbers.remote + 1n },
  };
  const info: Effect = {
    type: 'send',
    msg: {
      type: 'UpdateTlcInfo',
      value: {
        channelId: b(c.id),
        timestamp: BigInt(Date.now()),
        channelFlags: c.enabled ? 0 : 1,
        tlcExpiryDelta: c.tlcExpiryDelta,
        tlcMinimumValue: c.tlcMinValue,
        tlcFeeProportionalMillionths: c.tlcFeeProportionalMillionths,
      },
    },
  };
  const announce: Effect[] = c.isPublic && c.announcement?.theirNonce ? [{ type: 'announce' }] : [];
  return { ch: c, effects: [info, ...announce] };
}
