/**
 * A hostile peer for fnn-mode channels (issue 16, docs/nonces.md "The hostile peer"): it drives a
 * Strand machine through every path the protocol offers, collects each partial signature Strand
 * produces with the public data of its session, and tries to solve for Strand's funding key.
 *
 * A BIP-327 partial signature is s = σ·k1 + σ·b·k2 + e·a·g·d (mod n): (k1, k2) the secret nonce
 * pair, d the secret key, b the nonce coefficient, e the challenge, a the key-aggregation
 * coefficient, σ = ±1 by the parity of the final nonce R and g = ±1 by the parity of the aggregate
 * key Q. Everything except k1, k2, d is public. Three signatures under one nonce pair (identified
 * by its public R1 ‖ R2) are three linear equations in three unknowns: solved for d, checked
 * against d·G.
 *
 * The session values are recomputed here from public data only (keys, public nonces, message),
 * independently of `src/crypto/musig2-fast.ts`, and each recorded partial is checked against them
 * with the verification equation s·G = σ·(R1 + b·R2) + e·a·g·P before it is used.
 */
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { ChannelError } from '../../src/channel/errors.ts';
import { NonceSpent } from '../../src/channel/fnn-nonces.ts';
import { step } from '../../src/channel/machine.ts';
import { FORCE_CLOSE_REQUEST } from '../../src/channel/outdated.ts';
import { reestablishMessage } from '../../src/channel/reestablish.ts';
import type { Channel } from '../../src/channel/state.ts';
import type { Effect, Event, Step } from '../../src/channel/step.ts';
import type { ChannelMessage } from '../../src/channel/wire.ts';
import { bytesToHex, hexToBytes } from '../../src/codec/hex.ts';
import { curve } from '../../src/crypto/curve.ts';
import type { Side } from './pair-harness.ts';
import { type Tapped, tapped } from './signer-tap.ts';

// ---- BIP-327 session values, from public data ----------------------------------------------------

const Point = secp256k1.Point;
type Pt = InstanceType<typeof Point>;
const N = Point.Fn.ORDER;
const mod = (x: bigint) => ((x % N) + N) % N;
const int = (x: Uint8Array) => BigInt(`0x${Buffer.from(x).toString('hex') || '0'}`);
const tagged = (tag: string, ...parts: Uint8Array[]) => mod(int(schnorr.utils.taggedHash(tag, ...parts)));
const hex = (x: Uint8Array) => Buffer.from(x).toString('hex');
const xOnly = (p: Pt) => p.toBytes(true).subarray(1);
const evenY = (p: Pt) => p.toBytes(true)[0] === 2;
/**
 * k·P. The group operation itself comes from the node's curve backend (libsecp256k1 when it
 * loads, ~20× faster than pure JS over a thousand signatures); BIP-327 above it is this file's.
 */
const times = (p: Pt, k: bigint): Pt =>
  mod(k) === 0n || p.is0()
    ? Point.ZERO
    : Point.fromBytes(curve().mul(p.toBytes(true), Point.Fn.toBytes(mod(k))));
const point = (b: Uint8Array): Pt => (b.every((x) => x === 0) ? Point.ZERO : Point.fromBytes(b));
const enc33 = (p: Pt) => (p.is0() ? new Uint8Array(33) : p.toBytes(true));

const aggregates = new Map<string, { Q: Pt; coef: (k: Uint8Array) => bigint }>();

/** KeyAgg: the coefficient of each key and the aggregate Q (kept per key list). */
function keyAgg(keys: Uint8Array[]): { Q: Pt; coef: (k: Uint8Array) => bigint } {
  const id = keys.map(hex).join('');
  const hit = aggregates.get(id);
  if (hit) return hit;
  const L = schnorr.utils.taggedHash('KeyAgg list', ...keys);
  const second = keys.find((k) => hex(k) !== hex(keys[0] as Uint8Array));
  const coef = (k: Uint8Array) =>
    second && hex(second) === hex(k) ? 1n : tagged('KeyAgg coefficient', L, k);
  const Q = keys.reduce((acc, k) => acc.add(times(point(k), coef(k))), Point.ZERO);
  aggregates.set(id, { Q, coef });
  return { Q, coef };
}

/** One partial signature as a linear equation: c·(k1, k2, d) = s (mod n). */
export interface Equation {
  c: [bigint, bigint, bigint];
  s: bigint;
}

/** The public coefficients of a recorded partial; throws if it does not verify against them. */
export function equationOf(
  t: Pick<Tapped, 'signer' | 'keys' | 'nonce' | 'others' | 'msg' | 'partial'>,
): Equation {
  const { Q, coef } = keyAgg(t.keys);
  const g = evenY(Q) ? 1n : N - 1n;
  // Nonce aggregation, the nonce coefficient b, the final nonce R and the challenge e.
  const all = [t.nonce, ...t.others];
  const R1 = all.reduce((acc, n) => acc.add(point(n.subarray(0, 33))), Point.ZERO);
  const R2 = all.reduce((acc, n) => acc.add(point(n.subarray(33, 66))), Point.ZERO);
  const aggnonce = new Uint8Array([...enc33(R1), ...enc33(R2)]);
  const b = tagged('MuSig/noncecoef', aggnonce, xOnly(Q), t.msg);
  const R0 = R1.add(times(R2, b));
  const R = R0.is0() ? Point.BASE : R0;
  const e = tagged('BIP0340/challenge', xOnly(R), xOnly(Q), t.msg);
  const sigma = evenY(R) ? 1n : N - 1n;
  const a = coef(t.signer);
  const s = int(t.partial);
  // s·G = σ·(R1ᵢ + b·R2ᵢ) + e·a·g·P: the recorded values are what the signer used.
  const mine = point(t.nonce.subarray(0, 33)).add(times(point(t.nonce.subarray(33, 66)), b));
  const right = times(mine, sigma).add(times(point(t.signer), mod(e * a * g)));
  if (!times(Point.BASE, s).equals(right)) throw new Error('a recorded partial signature does not verify');
  return { c: [sigma, mod(sigma * b), mod(e * a * g)], s };
}

const inv = (x: bigint) => {
  // Fermat: x^(n−2) mod n.
  let r = 1n;
  let base = mod(x);
  let k = N - 2n;
  while (k > 0n) {
    if (k & 1n) r = (r * base) % N;
    base = (base * base) % N;
    k >>= 1n;
  }
  return r;
};

/**
 * Gaussian elimination mod n on the equations: the unique (k1, k2, d) when they have rank 3
 * (d is what is returned), null when they leave it undetermined.
 */
export function solveKey(eqs: Equation[]): bigint | null {
  const rows = eqs.map((e) => [...e.c, e.s].map(mod));
  let r = 0;
  for (let col = 0; col < 3; col++) {
    const p = rows.findIndex((row, i) => i >= r && row[col] !== 0n);
    if (p < 0) return null;
    [rows[r], rows[p]] = [rows[p] as bigint[], rows[r] as bigint[]];
    const pivot = rows[r] as bigint[];
    const iv = inv(pivot[col] as bigint);
    for (let j = 0; j < 4; j++) pivot[j] = mod((pivot[j] as bigint) * iv);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] as bigint[];
      if (i === r || row[col] === 0n) continue;
      const f = row[col] as bigint;
      for (let j = 0; j < 4; j++) row[j] = mod((row[j] as bigint) - f * (pivot[j] as bigint));
    }
    r++;
  }
  return (rows[2] as bigint[])[3] as bigint;
}

/**
 * With d fixed at `d`, the nonce pair (k1, k2) that makes two equations hold — there always is one
 * when b differs between them: two signatures are consistent with every key.
 */
export function noncesFor(eqs: [Equation, Equation], d: bigint): [bigint, bigint] | null {
  const [x, y] = eqs;
  const r1 = mod(x.s - x.c[2] * d);
  const r2 = mod(y.s - y.c[2] * d);
  const det = mod(x.c[0] * y.c[1] - x.c[1] * y.c[0]);
  if (det === 0n) return null;
  const k1 = mod((r1 * y.c[1] - x.c[1] * r2) * inv(det));
  const k2 = mod((x.c[0] * r2 - y.c[0] * r1) * inv(det));
  return [k1, k2];
}

export function publicKeyOf(d: bigint): Uint8Array {
  return times(Point.BASE, d).toBytes(true);
}

export interface AttackReport {
  /** Signatures used (kept ones by the target's key). */
  signatures: number;
  /** How many of the target's public nonce pairs produced 1, 2, 3… distinct signatures. */
  usesPerNonce: Record<number, number>;
  /** The key, when some nonce pair gave enough to solve it (checked against d·G). */
  recovered: bigint | null;
}

/**
 * Every partial signature of `target` the tap holds, by nonce pair: those that may leave the node,
 * or (`withDiscarded`) also those computed in a step that failed and were dropped with it.
 */
export function attack(target: Uint8Array, opts: { withDiscarded?: boolean } = {}): AttackReport {
  const groups = new Map<string, Map<string, Equation>>();
  let signatures = 0;
  for (const t of tapped) {
    if ((t.discarded && !opts.withDiscarded) || hex(t.signer) !== hex(target)) continue;
    signatures++;
    const eq = equationOf(t);
    const g = groups.get(hex(t.nonce)) ?? new Map<string, Equation>();
    // The same session signed again is the same equation: counted once.
    g.set(`${eq.c.join(',')}:${eq.s}`, eq);
    groups.set(hex(t.nonce), g);
  }
  const usesPerNonce: Record<number, number> = {};
  let recovered: bigint | null = null;
  for (const g of groups.values()) {
    usesPerNonce[g.size] = (usesPerNonce[g.size] ?? 0) + 1;
    if (g.size < 3 || recovered !== null) continue;
    const d = solveKey([...g.values()]);
    if (d !== null && hex(publicKeyOf(d)) === hex(target)) recovered = d;
  }
  return { signatures, usesPerNonce, recovered };
}

// ---- the peer --------------------------------------------------------------------------------------

export interface Refusal {
  by: 'strand' | 'peer';
  what: string;
  error: Error;
}

/** The message types that carry a partial signature of the sender, and where. */
export function partialIn(m: ChannelMessage): Uint8Array | null {
  switch (m.type) {
    case 'CommitmentSigned':
      return m.value.fundingTxPartialSignature;
    case 'RevokeAndAck':
      return m.value.revocationPartialSignature;
    case 'ClosingSigned':
    case 'AnnouncementSignatures':
      return m.value.partialSignature;
    default:
      return null;
  }
}

/**
 * The hostile peer around two pure machines: `strand` (the node under attack, rules 'fnn') and
 * `peer` (a machine on fnn's nonce schedule that the peer uses to make valid signatures of its
 * own, and bypasses whenever it likes: it withholds, replays, rewrites and reorders messages).
 */
export class HostilePeer {
  readonly refusals: Refusal[] = [];
  /** Every message Strand sent, in order. */
  readonly fromStrand: ChannelMessage[] = [];
  /** Every message the peer sent to Strand (for replays). */
  readonly fromPeer: ChannelMessage[] = [];
  /** What each force-close attempt came to ('closed', 'refused', 'nothing'), in order. */
  readonly outcomes: string[] = [];
  /** Messages from the peer's machine that are dropped instead of delivered. */
  withhold: (m: ChannelMessage) => boolean = () => false;

  constructor(
    readonly strand: Side,
    readonly peer: Side,
    readonly env: () => import('../../src/channel/step.ts').MachineEnv,
    readonly broadcast: (tx: import('@ckb-ccc/core').ccc.Transaction) => void,
  ) {}

  /**
   * One step of a machine. A step that throws changes nothing (the shell persists and acts on a
   * step only once it returned): the partials it computed never leave and are marked so.
   */
  private run1(who: 'strand' | 'peer', ev: Event): Step | Error {
    const side = who === 'strand' ? this.strand : this.peer;
    const mark = tapped.length;
    try {
      const r = step(side.ch, ev, this.env());
      side.ch = r.ch;
      this.perform(who, r.effects);
      return r;
    } catch (e) {
      for (const t of tapped.slice(mark)) t.discarded = true;
      if (!(e instanceof ChannelError)) throw e;
      const what = ev.type === 'peer' ? ev.msg.type : ev.type;
      this.refusals.push({ by: who, what, error: e });
      return e;
    }
  }

  private perform(who: 'strand' | 'peer', effects: Effect[]): void {
    for (const e of effects) {
      if (e.type === 'send') {
        if (who === 'strand') {
          this.fromStrand.push(e.msg);
          this.peer.inbox.push(e.msg);
        } else if (!this.withhold(e.msg)) this.toStrand(e.msg);
      } else if (e.type === 'broadcast') {
        (who === 'strand' ? this.strand : this.peer).seen.push(e);
        this.broadcast(e.tx);
      } else (who === 'strand' ? this.strand : this.peer).seen.push(e);
    }
  }

  /** A message the peer sends Strand (its machine's, or one it made up). */
  toStrand(m: ChannelMessage): void {
    this.fromPeer.push(m);
    this.strand.inbox.push(m);
  }

  /** Strand takes `m` now, ahead of whatever is in flight. */
  strandReceives(m: ChannelMessage): Step | Error {
    return this.run1('strand', { type: 'peer', msg: m });
  }

  /** Strand's operator (or its shell) does something. */
  strandDoes(ev: Event): Step | Error {
    return this.run1('strand', ev);
  }

  /** The peer's machine does something (its messages go out unless withheld). */
  peerDoes(ev: Event): Step | Error {
    return this.run1('peer', ev);
  }

  /** Delivers at most `limit` messages, alternating sides; returns how many. */
  deliver(limit = 10_000): number {
    let n = 0;
    while (n < limit) {
      let moved = false;
      for (const who of ['strand', 'peer'] as const) {
        if (n >= limit) break;
        const side = who === 'strand' ? this.strand : this.peer;
        const msg = side.inbox.shift();
        if (!msg) continue;
        moved = true;
        n++;
        this.run1(who, { type: 'peer', msg });
      }
      if (!moved) break;
      if (n > 5000) throw new Error('the machines keep talking');
    }
    return n;
  }

  /** The link drops (what was in flight is lost) and both sides reestablish. */
  reconnect(): void {
    this.strand.inbox.length = 0;
    this.peer.inbox.length = 0;
    this.toStrand(reestablishMessage(this.peer.ch));
    this.peer.inbox.push(reestablishMessage(this.strand.ch));
    this.deliver();
  }

  /** Sends Strand, again, every message the peer ever sent it (all at once, in order). */
  replayAll(): void {
    for (const m of [...this.fromPeer]) this.strand.inbox.push(m);
    this.deliver();
  }

  /** A Reestablish with made-up numbers (a peer claiming to have lost, or gained, state). */
  reestablishAs(local: bigint, remote: bigint): void {
    this.toStrand({
      type: 'ReestablishChannel',
      value: {
        channelId: hexToBytes(this.strand.ch.id),
        localCommitmentNumber: local,
        remoteCommitmentNumber: remote,
      },
    });
    this.deliver();
  }

  /** A Shutdown of the peer's choosing (any fee rate, any script), not from its machine. */
  shutdownWith(feeRate: bigint, closeScript: import('@ckb-ccc/core').ccc.Script): void {
    this.toStrand({
      type: 'Shutdown',
      value: { channelId: hexToBytes(this.strand.ch.id), feeRate, closeScript },
    });
    this.deliver();
  }

  /** "Your state is newer than mine, please force-close" (the outdated-state request). */
  askForceClose(): void {
    this.toStrand({
      type: 'TxAbort',
      value: {
        channelId: hexToBytes(this.strand.ch.id),
        message: new TextEncoder().encode(`${FORCE_CLOSE_REQUEST}hostile peer`),
      },
    });
    this.deliver();
  }

  /** A ClosingSigned with an arbitrary partial signature. */
  closingSignedWith(partial: Uint8Array): void {
    this.toStrand({
      type: 'ClosingSigned',
      value: { channelId: hexToBytes(this.strand.ch.id), partialSignature: partial },
    });
    this.deliver();
  }

  /** Strand's refusals that are nonce refusals (a third signature asked for). */
  nonceRefusals(): Refusal[] {
    return this.refusals.filter((r) => r.by === 'strand' && r.error instanceof NonceSpent);
  }

  /** Strand's current channel, serialised for comparison. */
  snapshot(): string {
    return JSON.stringify(this.strand.ch, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));
  }
}

/** The partials Strand sent that the tap does not hold as kept (must be none). */
export function untapped(messages: ChannelMessage[], target: Uint8Array): string[] {
  const kept = new Set(
    tapped.filter((t) => !t.discarded && hex(t.signer) === hex(target)).map((t) => hex(t.partial)),
  );
  return messages
    .map((m) => ({ m, p: partialIn(m) }))
    .filter((x) => x.p !== null && !kept.has(hex(x.p)))
    .map((x) => x.m.type);
}

export const fundingPubkeyOf = (ch: Channel): Uint8Array => hexToBytes(ch.local.fundingPubkey);
export { bytesToHex };
