/**
 * A settled payment, as the store keeps it once nothing can change it any more: a payment session
 * ended (Success or Failed) with no attempt in flight and, for a trampoline's own payment, its
 * incoming TLC settled. What is kept is what `get_payment` / `list_payments` answer (status,
 * times, fee, failure, custom records, the routes of the attempts that counted) and what defines
 * the payment (target, amount, asset, invoice, preimage, how many attempts were made); what only
 * a live session needs goes (onion shared secrets and keys, attempt ids, routing limits, failed
 * attempts' routes).
 *
 * The body is a compact binary form, about a quarter of the session's JSON (`encodeSettled`,
 * version 1): LEB128 varints for numbers and amounts, raw bytes for keys, hashes and outpoints.
 */
import { StoreError } from '../codec/index.ts';
import { activeAttempts } from './mpp.ts';
import type { PaymentRequest } from './request.ts';
import { isFinal, type PaymentSession } from './session.ts';

/** One hop of a route, as an attempt records it. */
export interface RouteHop {
  target: string;
  channelOutpoint: string;
  amountReceived: bigint;
}

/** What `get_payment` and `list_payments` show of a payment, live or settled. */
export interface PaymentView {
  paymentHash: string;
  status: PaymentSession['status'];
  createdAt: number;
  lastUpdatedAt: number;
  failedError: string | null;
  fee: bigint;
  customRecords: Record<string, string> | null;
  /** Per attempt that counts (in flight or fulfilled), its route. */
  routes: RouteHop[][];
}

export interface SettledPayment extends PaymentView {
  status: 'Success' | 'Failed';
  targetPubkey: string;
  amount: bigint;
  preimage: string | null;
  udtTypeScript: PaymentRequest['udtTypeScript'];
  invoice: string | null;
  /** Attempts made, failed ones included. */
  tries: number;
}

export function viewOf(s: PaymentSession): PaymentView {
  return {
    paymentHash: s.paymentHash,
    status: s.status,
    createdAt: s.createdAt,
    lastUpdatedAt: s.lastUpdatedAt,
    failedError: s.failedError,
    fee: s.fee,
    customRecords: s.request.customRecords,
    routes: activeAttempts(s).map((a) => a.route),
  };
}

const HASH = /^0x[0-9a-f]{64}$/;
const PUBKEY = /^0[23][0-9a-f]{64}$/;
const OUTPOINT = /^0x[0-9a-f]{72}$/;

/**
 * The session as a settled payment, once it is one: ended, nothing in flight, a trampoline's
 * incoming TLC settled. Undefined while it may still change — or if a field is not in the form
 * the compact body keeps (then the session stays whole).
 */
export function settledOf(s: PaymentSession): SettledPayment | undefined {
  if (!HASH.test(s.paymentHash) || !isFinal(s) || s.attempts.some((a) => a.status === 'Inflight'))
    return undefined;
  const r = s.request;
  if (r.trampoline && !r.trampoline.upstreamSettled) return undefined;
  const routes = activeAttempts(s).map((a) => a.route);
  const ok =
    (s.preimage === null || HASH.test(s.preimage)) &&
    PUBKEY.test(r.targetPubkey) &&
    s.fee >= 0n &&
    r.amount >= 0n &&
    Number.isSafeInteger(s.createdAt) &&
    Number.isSafeInteger(s.lastUpdatedAt) &&
    routes.every((route) =>
      route.every((h) => PUBKEY.test(h.target) && OUTPOINT.test(h.channelOutpoint) && h.amountReceived >= 0n),
    );
  if (!ok) return undefined;
  return {
    paymentHash: s.paymentHash,
    status: s.status as SettledPayment['status'],
    createdAt: s.createdAt,
    lastUpdatedAt: s.lastUpdatedAt,
    failedError: s.failedError,
    fee: s.fee,
    customRecords: r.customRecords,
    routes: routes.map((route) =>
      route.map((h) => ({
        target: h.target,
        channelOutpoint: h.channelOutpoint,
        amountReceived: h.amountReceived,
      })),
    ),
    targetPubkey: r.targetPubkey,
    amount: r.amount,
    preimage: s.preimage,
    udtTypeScript: r.udtTypeScript,
    invoice: r.invoice,
    tries: s.attempts.length,
  };
}

// ---- the body ---------------------------------------------------------------------------------

const VERSION = 1;
const HAS_PREIMAGE = 1;
const HAS_FAILED_ERROR = 2;
const HAS_CUSTOM_RECORDS = 4;
const HAS_UDT = 8;
const HAS_INVOICE = 16;

class Writer {
  private buf = new Uint8Array(512);
  private at = 0;

  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.at + n));
    next.set(this.buf.subarray(0, this.at));
    this.buf = next;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.at++] = b;
  }

  /** Unsigned LEB128. */
  varint(v: bigint | number): void {
    let n = BigInt(v);
    do {
      const low = Number(n & 0x7fn);
      n >>= 7n;
      this.byte(n ? low | 0x80 : low);
    } while (n);
  }

  hex(h: string): void {
    const b = Buffer.from(h.startsWith('0x') ? h.slice(2) : h, 'hex');
    this.room(b.length);
    this.buf.set(b, this.at);
    this.at += b.length;
  }

  text(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.varint(b.length);
    this.room(b.length);
    this.buf.set(b, this.at);
    this.at += b.length;
  }

  done(): Uint8Array {
    return this.buf.slice(0, this.at);
  }
}

class Reader {
  private at = 0;
  constructor(private readonly buf: Uint8Array) {}

  byte(): number {
    if (this.at >= this.buf.length) throw new StoreError('a settled payment body ends early');
    return this.buf[this.at++]!;
  }

  big(): bigint {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.byte();
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      shift += 7n;
      if (shift > 256n) throw new StoreError('a settled payment body holds an overlong number');
    }
  }

  int(): number {
    const v = this.big();
    if (v > BigInt(Number.MAX_SAFE_INTEGER))
      throw new StoreError('a settled payment body holds an overlong number');
    return Number(v);
  }

  hex(n: number, prefix: boolean): string {
    if (this.at + n > this.buf.length) throw new StoreError('a settled payment body ends early');
    const s = Buffer.from(this.buf.buffer, this.buf.byteOffset + this.at, n).toString('hex');
    this.at += n;
    return prefix ? `0x${s}` : s;
  }

  text(): string {
    const n = this.int();
    if (this.at + n > this.buf.length) throw new StoreError('a settled payment body ends early');
    const s = Buffer.from(this.buf.buffer, this.buf.byteOffset + this.at, n).toString('utf8');
    this.at += n;
    return s;
  }

  end(): void {
    if (this.at !== this.buf.length) throw new StoreError('a settled payment body has trailing bytes');
  }
}

/**
 * The body of a settled payment: everything but its hash, status and times (the row's columns).
 * Layout (version 1): version, flags, fee, amount, target (33 bytes), [preimage (32)], tries,
 * [failed error], [custom records JSON], [UDT script JSON], [invoice], then the routes: their
 * count, and per route its hops (target 33, funding tx hash 32, output index, amount received).
 */
export function encodeSettled(p: SettledPayment): Uint8Array {
  const w = new Writer();
  w.byte(VERSION);
  const flags =
    (p.preimage !== null ? HAS_PREIMAGE : 0) |
    (p.failedError !== null ? HAS_FAILED_ERROR : 0) |
    (p.customRecords !== null ? HAS_CUSTOM_RECORDS : 0) |
    (p.udtTypeScript !== null ? HAS_UDT : 0) |
    (p.invoice !== null ? HAS_INVOICE : 0);
  w.byte(flags);
  w.varint(p.fee);
  w.varint(p.amount);
  w.hex(p.targetPubkey);
  if (p.preimage !== null) w.hex(p.preimage);
  w.varint(p.tries);
  if (p.failedError !== null) w.text(p.failedError);
  if (p.customRecords !== null) w.text(JSON.stringify(p.customRecords));
  if (p.udtTypeScript !== null) w.text(JSON.stringify(p.udtTypeScript));
  if (p.invoice !== null) w.text(p.invoice);
  w.varint(p.routes.length);
  for (const route of p.routes) {
    w.varint(route.length);
    for (const h of route) {
      w.hex(h.target);
      w.hex(h.channelOutpoint.slice(0, 66));
      w.varint(Buffer.from(h.channelOutpoint.slice(66), 'hex').readUInt32LE(0));
      w.varint(h.amountReceived);
    }
  }
  return w.done();
}

export function decodeSettled(
  row: { paymentHash: string; status: string; createdAt: number; lastUpdatedAt: number },
  body: Uint8Array,
): SettledPayment {
  if (row.status !== 'Success' && row.status !== 'Failed')
    throw new StoreError(`a settled payment with status ${row.status}`);
  const r = new Reader(body);
  const version = r.byte();
  if (version !== VERSION) throw new StoreError(`a settled payment body of version ${version}`);
  const flags = r.byte();
  const fee = r.big();
  const amount = r.big();
  const targetPubkey = r.hex(33, false);
  const preimage = flags & HAS_PREIMAGE ? r.hex(32, true) : null;
  const tries = r.int();
  const failedError = flags & HAS_FAILED_ERROR ? r.text() : null;
  const customRecords = flags & HAS_CUSTOM_RECORDS ? JSON.parse(r.text()) : null;
  const udtTypeScript = flags & HAS_UDT ? JSON.parse(r.text()) : null;
  const invoice = flags & HAS_INVOICE ? r.text() : null;
  const routes: RouteHop[][] = [];
  for (let i = r.int(); i > 0; i--) {
    const route: RouteHop[] = [];
    for (let j = r.int(); j > 0; j--) {
      const target = r.hex(33, false);
      const txHash = r.hex(32, true);
      const index = Buffer.alloc(4);
      index.writeUInt32LE(r.int());
      route.push({ target, channelOutpoint: `${txHash}${index.toString('hex')}`, amountReceived: r.big() });
    }
    routes.push(route);
  }
  r.end();
  return {
    paymentHash: row.paymentHash,
    status: row.status,
    createdAt: row.createdAt,
    lastUpdatedAt: row.lastUpdatedAt,
    failedError,
    fee,
    customRecords,
    routes,
    targetPubkey,
    amount,
    preimage,
    udtTypeScript,
    invoice,
    tries,
  };
}
