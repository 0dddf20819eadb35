/**
 * The funding cell and the commitments it secures: building each side's commitment, signing the
 * peer's and completing ours (Strand's nonce rules or fnn's), the funding tx kept in the state.
 */
import { ccc } from '@ckb-ccc/core';
import { bytesToHex, hexToBytes, txBytes } from '../codec/index.ts';
import { blake160 } from '../crypto/index.ts';
import { ChannelError } from './errors.ts';
import { advertiseCommitment, fnnOf, isFnn, useCommitmentNonce } from './fnn-nonces.ts';
import { keysOf } from './keys.ts';
import {
  aggregateTwo,
  complete,
  type NoncePair,
  SignatureError,
  signFirst,
  signWithNonce,
  sorted2,
  verifyPartial,
} from './musig.ts';
import { toScript } from './script-data.ts';
import type { Channel, PartyParams, Tlc } from './state.ts';
import type { MachineEnv, Step } from './step.ts';
import { tlcPubkeysHex } from './tlc-keys.ts';
import {
  commitmentLockArgs,
  commitmentTx,
  commitmentTxSize,
  feeOf,
  fundingLockScript,
  fundingWitness,
  settlementEntry,
  settlementScriptOf,
  txHash,
  txMessage,
} from './tx.ts';
import type { ChannelMessage } from './wire.ts';

const b = (h: string) => hexToBytes(h);
const h = (x: Uint8Array) => bytesToHex(x);

/**
 * blake160 of a public key (hex), memoized: every commitment hashes both keys of every pending
 * TLC, each round, and a TLC's keys never change. Bounded: cleared when it grows past 100,000.
 */
const keyHashes = new Map<string, Uint8Array>();
function keyHash(key: string): Uint8Array {
  let v = keyHashes.get(key);
  if (!v) {
    if (keyHashes.size >= 100_000) keyHashes.clear();
    v = blake160(b(key));
    keyHashes.set(key, v);
  }
  return v;
}

/** A TLC's settlement entries, as the holder of our commitment (0) and of the peer's (1) sees it. */
interface Entries {
  local: string;
  remote: string;
  bytes: [Uint8Array | undefined, Uint8Array | undefined];
}

/**
 * Settlement entries kept with their TLC: a TLC object never changes (a changed TLC is a new
 * object), and every commitment of every round wrote each pending TLC's 85 bytes again. The keys
 * they were made with are kept too, and checked: a TLC without keys of its own takes the
 * channel's.
 */
const tlcEntries = new WeakMap<Tlc, Entries>();
function entryOf(ch: Channel, t: Tlc, forRemote: boolean, offeredByHolder: boolean): Uint8Array {
  const k = tlcPubkeysHex(ch, t);
  let e = tlcEntries.get(t);
  if (!e || e.local !== k.local || e.remote !== k.remote) {
    e = { local: k.local, remote: k.remote, bytes: [undefined, undefined] };
    tlcEntries.set(t, e);
  }
  const side = forRemote ? 1 : 0;
  let bytes = e.bytes[side];
  if (!bytes) {
    bytes = settlementEntry({
      offeredByHolder,
      hashAlgorithm: t.hashAlgorithm,
      amount: t.amount,
      paymentHash: b(t.paymentHash),
      holderKeyHash: keyHash(forRemote ? k.remote : k.local),
      otherKeyHash: keyHash(forRemote ? k.local : k.remote),
      expiry: t.expiry,
    });
    e.bytes[side] = bytes;
  }
  return bytes;
}

export function fundingLock(ch: Channel, env: MachineEnv): ccc.Script {
  if (!ch.remote) throw new ChannelError('MissingState', 'no remote parameters');
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
  const holderKeyHash = keyHash(holder.p.tlcBasepoint);
  const otherKeyHash = keyHash(other.p.tlcBasepoint);
  const script = settlementScriptOf(
    ordered.map((t) => entryOf(ch, t, forRemote, holderOffered(t))),
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
 * Our partial signature of `msg` under the funding key aggregated with the peer's, both nonces
 * advertised before (the cooperative close, the channel announcement). A partial of the peer's
 * that does not verify is InvalidSignature: `invalid <what> signature from the peer`.
 */
export function aggregateFunding(
  ch: Channel,
  what: string,
  p: Omit<Parameters<typeof aggregateTwo>[0], 'myPubkey' | 'theirPubkey' | 'keys'>,
): Uint8Array {
  const localPk = b(ch.local.fundingPubkey);
  const remotePk = b((ch.remote as PartyParams).fundingPubkey);
  try {
    return aggregateTwo({ ...p, myPubkey: localPk, theirPubkey: remotePk, keys: sorted2(localPk, remotePk) });
  } catch (e) {
    if (e instanceof SignatureError)
      throw new ChannelError('InvalidSignature', `invalid ${what} signature from the peer`);
    throw e;
  }
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
    const next = advertiseCommitment(used.ch, env);
    return msg(next.ch, used.value, next.nonce);
  }
  const theirNonce = ch.nonces.theirs[0];
  if (!theirNonce) throw new ChannelError('NonceExhausted', 'no nonce of the peer left');
  const k = keysOf(ch);
  const s = signFirst(k.fundingKey, b(theirNonce), fundingKeys(ch), txMessage(tx), k.fundingPubkey);
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
      if (!my) throw new ChannelError('NonceExhausted', 'no nonce of ours left');
      sig = session({ secret: b(my.secret), public: b(my.public) }, nonceInMessage);
      ch = { ...ch0, nonces: { ...ch0.nonces, mine: ch0.nonces.mine.slice(1) } };
    }
  } catch (e) {
    if (e instanceof SignatureError)
      throw new ChannelError('InvalidSignature', 'invalid commitment signature from the peer');
    throw e;
  }
  tx.witnesses = [fundingWitness(k.fundingPubkey, b((ch.remote as PartyParams).fundingPubkey), sig)];
  // Stored ready to broadcast: with the funding lock's deps (the signature does not cover them,
  // the tx hash does — so this is the hash the chain will know).
  tx.cellDeps = channelDeps(ch, env);
  return {
    ...ch,
    latestCommitmentTx: h(txBytes(tx)),
    latestCommitmentTxHash: txHash(tx),
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
    if (e instanceof SignatureError)
      throw new ChannelError('InvalidSignature', 'invalid commitment signature from the peer');
    throw e;
  }
  tx.cellDeps = channelDeps(ch, env);
  const own = { partial: h(partial), myNonce: f.current, theirNonce: f.theirs };
  // The nonce the replaced commitment waited on (advertised before the current one) goes.
  const i = f.mine.findIndex((n) => n.public === f.current);
  return {
    ...ch,
    fnn: { ...f, mine: i > 0 ? f.mine.slice(i) : f.mine, own, theirs: h(nonceInMessage) },
    latestCommitmentTx: h(txBytes(tx)),
    latestCommitmentTxHash: txHash(tx),
  };
}

/**
 * fnn mode, to broadcast our latest commitment: our partial signature completes the peer's (a
 * counted use of the nonce it waits on; refused when that nonce already signed twice).
 */
export function completeForBroadcast(ch: Channel): { ch: Channel; tx: ccc.Transaction } {
  if (!ch.latestCommitmentTx)
    throw new ChannelError('CommitmentTxNotFound', 'Commitment transaction not found');
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
  return { ch: { ...used.ch, fnn: { ...f, own: null }, latestCommitmentTx: h(txBytes(tx)) }, tx };
}

export function signsFirst(ch: Channel): boolean {
  const r = ch.remote as PartyParams;
  if (ch.local.fundingAmount !== r.fundingAmount) return ch.local.fundingAmount < r.fundingAmount;
  return Buffer.compare(b(ch.local.fundingPubkey), b(r.fundingPubkey)) <= 0;
}

export function setFundingTx(ch: Channel, tx: ccc.Transaction): Channel {
  return { ...ch, fundingTx: h(tx.toBytes()), fundingTxHash: tx.hash() };
}

export function fundingTxOf(ch: Channel): ccc.Transaction {
  if (!ch.fundingTx) throw new ChannelError('MissingState', 'no funding transaction');
  return ccc.Transaction.fromBytes(ch.fundingTx);
}

/**
 * When both TxComplete are in: counters to 1/1, our CommitmentSigned goes out — unless the
 * opener's part is funded externally and not signed yet (then wait for it, `external-funding.ts`).
 */

/** Both TxComplete are in: counters to 1/1, and our CommitmentSigned goes out. */
export function startCommitmentSigning(ch0: Channel, env: MachineEnv): Step {
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
