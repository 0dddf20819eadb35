/**
 * Curve work done ahead, while the node waits for its peer, instead of on the way to an answer.
 *
 * A round spends most of its time on a few message legs, and each leg waits for the curve work of
 * the step that answers it. Part of that work does not depend on the message being answered:
 * - every completion (our new commitment, the peer's revocation) takes a nonce of our pool and
 *   the step advertises a fresh one: BIP-327 NonceGen, two base-point multiplications;
 * - a RevokeAndAck names the point of our next commitment number;
 * - the first TLC a round offers derives both TLC keys (two multiplications and additions).
 * Here they are made once the node's output has left (the step's answer is on its way) and one
 * turn of the event loop later, one piece per turn, so that a message arriving meanwhile waits for
 * one piece at most. The step then finds them ready: nonces in a pool per funding key, the points
 * and keys in the memos of `keys.ts` and `tlc-keys.ts`, which give the same values either way.
 *
 * Nonces made ahead are secret and live only here, in memory: never stored, never sent, each
 * handed out once (taken from the pool as it is given), so a nonce still signs one message only;
 * a restart just loses them. Under load there is no waiting to fill and the pool is empty when
 * asked: the nonce is made on the spot, as before.
 */
import { bytesToHex } from '../codec/index.ts';
import { commitmentPoint, keysOf } from './keys.ts';
import { type NoncePair, newNonce } from './musig.ts';
import type { Channel } from './state.ts';
import { newTlcKeys } from './tlc-keys.ts';

/** Nonces kept ready per funding key: a round takes two per side (one per completion). */
export const NONCES_AHEAD = 2;
/** Funding keys with a pool at most (the busiest channels' keys; the pools start over past it). */
const MAX_POOLS = 4_096;

type Job = () => void;

export class WorkAhead {
  private readonly pools = new Map<string, NoncePair[]>();
  /** Pieces of work to do, by what they are for (a key's nonces, a channel's point): once each. */
  private readonly jobs = new Map<string, Job>();
  private scheduled = false;
  private stopped = false;

  constructor(
    /** Runs `fn` once the output offered so far has left the node (then a turn later). */
    private readonly afterOutput: (fn: () => void) => void,
    private readonly makeNonce: (pubkey: Uint8Array, secret: Uint8Array) => NoncePair = newNonce,
  ) {}

  /**
   * A fresh nonce for this funding key (the machine's `env.nonce`): one made ahead if there is
   * one, else made now. The pool is filled again once the output is out.
   */
  nonce(pubkey: Uint8Array, secret: Uint8Array): NoncePair {
    const id = bytesToHex(pubkey);
    const made = this.pools.get(id)?.shift();
    this.want(`nonce:${id}`, () => this.fill(id, pubkey, secret));
    return made ?? this.makeNonce(pubkey, secret);
  }

  /**
   * A channel's state was committed: what its next round will ask for that does not depend on
   * the peer's next message (the point of our next commitment number; the keys of the next TLC).
   */
  observe(ch: Channel): void {
    if (ch.state !== 'CHANNEL_READY' || !ch.remote || ch.pipelined) return;
    this.want(`ahead:${ch.tempId}`, () => {
      const keys = keysOf(ch);
      commitmentPoint(keys.commitmentSeed, ch.commitmentNumbers.remote + 1n);
      newTlcKeys(ch, () => keys);
    });
  }

  stop(): void {
    this.stopped = true;
    this.jobs.clear();
  }

  /** Nonces ready in the pool of a funding key (tests). */
  ready(pubkey: Uint8Array): number {
    return this.pools.get(bytesToHex(pubkey))?.length ?? 0;
  }

  private fill(id: string, pubkey: Uint8Array, secret: Uint8Array): void {
    let pool = this.pools.get(id);
    if (!pool) {
      if (this.pools.size >= MAX_POOLS) this.pools.clear();
      pool = [];
      this.pools.set(id, pool);
    }
    pool.push(this.makeNonce(pubkey, secret));
    if (pool.length < NONCES_AHEAD) this.want(`nonce:${id}`, () => this.fill(id, pubkey, secret));
  }

  private want(key: string, job: Job): void {
    if (this.stopped) return;
    this.jobs.set(key, job);
    if (this.scheduled) return;
    this.scheduled = true;
    this.afterOutput(() => this.runOne());
  }

  /** One piece of work, then the next one turn later (a message arriving in between goes first). */
  private runOne(): void {
    const next = this.jobs.entries().next();
    if (next.done || this.stopped) {
      this.scheduled = false;
      return;
    }
    const [key, job] = next.value;
    this.jobs.delete(key);
    try {
      job();
    } catch {
      // Work ahead is an optimisation: a failure here is met again, and reported, by the step.
    }
    if (this.jobs.size === 0) this.scheduled = false;
    else setImmediate(() => this.runOne());
  }
}
