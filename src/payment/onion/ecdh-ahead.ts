/**
 * The onions' ECDH made on another thread (`curve-worker.mjs`): k·α for this node's key k and the
 * ephemeral point α of each onion it is handed. That multiplication is half of a payee's peel and
 * the costlier half of a forwarder's (~45 µs of ~80–100 µs here). Made on the node's thread, it
 * ran while the peer waited: at 64 payments in flight a payee peeled while the payer had nothing
 * to do (a fifth of the payee's work then, read from both nodes' profiles on one clock). On the
 * worker it runs on the other core, while the node's thread takes the round's messages.
 *
 * Asks made in one turn go to the thread as one message, after the turn. An answer is a point, or
 * null when there is none (the thread could not load the curve library, failed, or the bytes are
 * not a point): the caller then multiplies itself, as without the thread. The node's key goes to
 * the thread with each batch: a thread of this process, holding it no longer than the node does.
 */
import { type CurveThread, curveThread } from '../../crypto/index.ts';

/** The thread's answers to `ecdh-ahead.ts`'s requests. */
export type EcdhAnswer = { id: number; kPs: Uint8Array };

type Done = (point: Uint8Array | null) => void;

export class EcdhAhead {
  private asks: { alpha: Uint8Array; done: Done }[] = [];
  private readonly pending = new Map<number, Done[]>();
  private nextId = 1;
  private unavailable = false;

  constructor(
    private readonly secretKey: Uint8Array,
    private readonly thread: CurveThread<EcdhAnswer> = curveThread<EcdhAnswer>(),
    /** Told once when the thread cannot do the work (its reason). */
    private readonly onUnavailable?: (reason: string) => void,
  ) {
    thread.onAnswer((a) => this.answered(a));
  }

  /** k·α (`alpha`: 33 bytes, compressed), or null, to `done` — never in the caller's turn. */
  ask(alpha: Uint8Array, done: Done): void {
    if (this.unavailable || alpha.length !== 33) {
      setImmediate(() => done(null));
      return;
    }
    this.asks.push({ alpha, done });
    if (this.asks.length === 1) setImmediate(() => this.send());
  }

  /** Asks sent and not answered yet (the tests read it). */
  get outstanding(): number {
    let n = 0;
    for (const d of this.pending.values()) n += d.length;
    return n + this.asks.length;
  }

  stop(): void {
    this.unavailable = true;
    this.thread.stop();
    this.fail();
  }

  private send(): void {
    const asks = this.asks;
    this.asks = [];
    if (asks.length === 0) return;
    if (this.unavailable) {
      for (const a of asks) a.done(null);
      return;
    }
    const points = new Uint8Array(asks.length * 33);
    asks.forEach((a, i) => {
      points.set(a.alpha, i * 33);
    });
    const id = this.nextId++;
    this.pending.set(
      id,
      asks.map((a) => a.done),
    );
    this.thread.send({ id, scalar: this.secretKey, points });
  }

  private answered(a: EcdhAnswer | { unavailable: string }): void {
    if ('unavailable' in a) {
      if (this.unavailable) return;
      this.unavailable = true;
      this.onUnavailable?.(a.unavailable);
      this.fail();
      return;
    }
    const dones = this.pending.get(a.id);
    if (!dones) return;
    this.pending.delete(a.id);
    dones.forEach((done, i) => {
      const p = a.kPs.subarray(i * 33, i * 33 + 33);
      done(p[0] === 0 ? null : p);
    });
  }

  /** Every ask still out is answered null: its caller multiplies itself. */
  private fail(): void {
    const all = [...this.pending.values()].flat();
    this.pending.clear();
    const asks = this.asks;
    this.asks = [];
    for (const done of [...all, ...asks.map((a) => a.done)]) done(null);
  }
}
