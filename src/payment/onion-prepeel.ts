/**
 * Onions peeled ahead: a received TLC's onion is peeled while its round is still going on, so
 * that the forward or the settlement that follows the round is ready at once.
 *
 * A hop can act on a TLC only once its round has committed it, three message legs after the
 * AddTlc arrived. In between, once its answer to the peer's CommitmentSigned has left, it waits
 * for the peer's RevokeAndAck with nothing to do. The peel (an ECDH and a pass of the cipher over
 * 6.5 KB: ~55 µs at the final hop, ~100 µs at a forwarder, which builds the next packet too) moves
 * into that wait. At 64 payments in flight a payee peeled 64 onions, ~3.6 ms, between the
 * RevokeAndAck and its RemoveTlcs; two hops, the forwarder ~6.4 ms more.
 *
 * A peel is a pure function of the onion, this node's key and the payment hash, so the result
 * kept is the result the relay would get; it is looked up by the onion's bytes object (the TLC
 * keeps the one it was received with) and the payment hash, and used once. Nothing is kept after
 * a restart (the relay peels again) and a TLC that never commits takes its entry away with it
 * (a WeakMap). The queue is bounded: past it, TLCs are peeled when they commit, as before.
 *
 * With a thread for the ECDH (`ecdh-ahead.ts`), each onion's k·α is asked for when the TLC is
 * announced and the rest of the peel waits for it: an onion whose point has not come back is
 * passed over, not multiplied here. A TLC that commits before its peel was made is peeled then,
 * with its point if that came back.
 */
import { hexToBytes } from '../codec/index.ts';
import type { EcdhAhead } from './onion/ecdh-ahead.ts';
import { type PeeledOnion, peelOnion } from './onion/packet.ts';

/** At most this many onions wait to be peeled ahead (a peer's in-flight limit is 125 by default). */
export const MAX_PREPEEL_QUEUE = 1024;

/** How a committed TLC's peel was made: all ahead, on commit with its ECDH from the thread, or on commit alone. */
export type PeelMade = 'ahead' | 'point' | 'none';

interface Announced {
  onion: Uint8Array;
  paymentHash: string;
}

export class OnionPrePeeler {
  /** Onions to peel, in the order announced, with their payment hashes. */
  private readonly queue = new Map<Uint8Array, string>();
  private readonly peeled = new WeakMap<Uint8Array, { paymentHash: string; result: PeeledOnion }>();
  /** With a thread: each asked onion's k·α once it came back (null: none, multiply here). */
  private readonly points = new WeakMap<Uint8Array, Uint8Array | null>();
  private scheduled = false;

  constructor(
    private readonly nodeSecretKey: Uint8Array,
    /**
     * Runs `fn` once the output this turn offered has left (the node: after the store's flush
     * released it, then one turn later), so that a peel never delays an answer to the peer.
     */
    private readonly afterOutput: (fn: () => void) => void,
    /** The ECDH on another thread; absent: each peel multiplies on this one. */
    private readonly ecdh?: EcdhAhead,
    /** How each taken TLC's peel was made (metrics): all ahead, on commit with its point, or not at all. */
    private readonly onTake?: (made: PeelMade) => void,
  ) {}

  /** The peer announced a TLC: its onion is peeled once this turn's output is out. */
  announced(tlc: Announced): void {
    if (tlc.onion.length < 34 || this.queue.size >= MAX_PREPEEL_QUEUE) return;
    const onion = tlc.onion;
    this.queue.set(onion, tlc.paymentHash);
    this.ecdh?.ask(onion.subarray(1, 34), (point) => {
      this.points.set(onion, point);
      if (this.queue.has(onion)) this.schedule((fn) => setImmediate(fn));
    });
    this.schedule(this.afterOutput);
  }

  /**
   * The peel of `onion` for `paymentHash`, if it was made ahead (taken: it is used once); else,
   * when its ECDH came back from the thread, the peel made now with it (an `OnionError` for a bad
   * onion, as `peelOnion` throws). Undefined: the caller peels it itself.
   */
  take(onion: Uint8Array, paymentHash: string): PeeledOnion | undefined {
    this.queue.delete(onion);
    const p = this.peeled.get(onion);
    if (p) {
      this.peeled.delete(onion);
      const ahead = p.paymentHash === paymentHash;
      this.onTake?.(ahead ? 'ahead' : 'none');
      return ahead ? p.result : undefined;
    }
    const point = this.points.get(onion);
    this.onTake?.(point ? 'point' : 'none');
    if (!point) return undefined;
    this.points.delete(onion);
    return peelOnion(onion, this.nodeSecretKey, hexToBytes(paymentHash), point);
  }

  private schedule(run: (fn: () => void) => void): void {
    if (this.scheduled) return;
    this.scheduled = true;
    run(() => this.peelNext());
  }

  /** Onions waiting to be peeled (the tests read it). */
  get waiting(): number {
    return this.queue.size;
  }

  /**
   * One onion a turn of the event loop: between two, the loop polls, so a RevokeAndAck that
   * arrives meanwhile is taken after one peel, not after the whole queue.
   */
  private peelNext(): void {
    const next = this.ready();
    if (!next) {
      // Nothing left, or only onions whose point is still on the thread: its answer schedules.
      this.scheduled = false;
      return;
    }
    const [onion, paymentHash] = next;
    this.queue.delete(onion);
    const point = this.points.get(onion) ?? undefined;
    this.points.delete(onion);
    try {
      const result = peelOnion(onion, this.nodeSecretKey, hexToBytes(paymentHash), point);
      this.peeled.set(onion, { paymentHash, result });
    } catch {
      // A bad onion is failed when its TLC commits, by the peel the relay makes then.
    }
    if (this.queue.size === 0) this.scheduled = false;
    else setImmediate(() => this.peelNext());
  }

  /** The first queued onion that can be peeled now: any, or with a thread, one whose ECDH is back. */
  private ready(): [Uint8Array, string] | undefined {
    for (const entry of this.queue) if (!this.ecdh || this.points.has(entry[0])) return entry;
    return undefined;
  }
}
