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
 */
import { hexToBytes } from '../codec/index.ts';
import { type PeeledOnion, peelOnion } from './onion/packet.ts';

/** At most this many onions wait to be peeled ahead (a peer's in-flight limit is 125 by default). */
export const MAX_PREPEEL_QUEUE = 1024;

interface Announced {
  onion: Uint8Array;
  paymentHash: string;
}

export class OnionPrePeeler {
  /** Onions to peel, in the order announced, with their payment hashes. */
  private readonly queue = new Map<Uint8Array, string>();
  private readonly peeled = new WeakMap<Uint8Array, { paymentHash: string; result: PeeledOnion }>();
  private scheduled = false;

  constructor(
    private readonly nodeSecretKey: Uint8Array,
    /**
     * Runs `fn` once the output this turn offered has left (the node: after the store's flush
     * released it, then one turn later), so that a peel never delays an answer to the peer.
     */
    private readonly afterOutput: (fn: () => void) => void,
  ) {}

  /** The peer announced a TLC: its onion is peeled once this turn's output is out. */
  announced(tlc: Announced): void {
    if (tlc.onion.length === 0 || this.queue.size >= MAX_PREPEEL_QUEUE) return;
    this.queue.set(tlc.onion, tlc.paymentHash);
    if (this.scheduled) return;
    this.scheduled = true;
    this.afterOutput(() => this.peelNext());
  }

  /**
   * The peel of `onion` for `paymentHash`, if it was made ahead (taken: it is used once). One
   * not made yet will not be: the caller peels it now.
   */
  take(onion: Uint8Array, paymentHash: string): PeeledOnion | undefined {
    this.queue.delete(onion);
    const p = this.peeled.get(onion);
    if (!p) return undefined;
    this.peeled.delete(onion);
    return p.paymentHash === paymentHash ? p.result : undefined;
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
    const next = this.queue.entries().next();
    if (next.done) {
      this.scheduled = false;
      return;
    }
    const [onion, paymentHash] = next.value;
    this.queue.delete(onion);
    try {
      const result = peelOnion(onion, this.nodeSecretKey, hexToBytes(paymentHash));
      this.peeled.set(onion, { paymentHash, result });
    } catch {
      // A bad onion is failed when its TLC commits, by the peel the relay makes then.
    }
    if (this.queue.size === 0) this.scheduled = false;
    else setImmediate(() => this.peelNext());
  }
}
