/**
 * The vocabulary of the channel machine: its environment, the events it takes, the effects it asks
 * the shell to perform, and a step (the new state and its effects). `fail` aborts an opening.
 */
import type { ccc } from '@ckb-ccc/core';
import { hexToBytes } from '../codec/index.ts';
import type { ShutdownCommand } from './close.ts';
import { keysOf } from './keys.ts';
import { type NoncePair, newNonce } from './musig.ts';
import type { Channel } from './state.ts';
import type { AddTlcCommand, RemoveReason, TlcCommand, TlcNotice, TlcOutcome } from './tlc.ts';
import type { ScriptInfo } from './tx.ts';
import type { ChannelMessage } from './wire.ts';

const b = (h: string) => hexToBytes(h);

export interface MachineEnv {
  /**
   * Where fresh secret nonces come from: BIP-327 NonceGen over 32 random bytes when absent (the
   * only safe choice for a live node). A replay or fuzz test injects a seeded source so that a
   * channel's run is a function of its inputs.
   */
  nonce?: (myPubkey: Uint8Array, mySecret: Uint8Array) => NoncePair;
  chainHash: string;
  fundingLock: ScriptInfo;
  commitmentLock: ScriptInfo;
  now(): number;
}

export type SendEffect = Extract<Effect, { type: 'send' }>;

export type Effect =
  /**
   * `mayWait`: the peer needs the message only after our next one, so the shell may hold it
   * until then (bounded; `held-sends.ts`) instead of waking the peer for it alone.
   */
  | { type: 'send'; msg: ChannelMessage; mayWait?: true }
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
  /** A new connection with the peer: our ReestablishChannel goes out (`reestablish.ts`). */
  | { type: 'reconnected' }
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

/** Aborts an opening: TxAbort to the peer, the channel CLOSED with the reason. */
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

/** A fresh nonce pair for this channel's funding key, from the environment's source. */
export function freshNonce(env: MachineEnv, ch: Channel): NoncePair {
  return keyNonce(env, keysOf(ch));
}

/** The same, for funding keys not yet in a channel (the opener's announcement nonce). */
export function keyNonce(
  env: MachineEnv,
  k: { fundingPubkey: Uint8Array; fundingKey: Uint8Array },
): NoncePair {
  return (env.nonce ?? newNonce)(k.fundingPubkey, k.fundingKey);
}
