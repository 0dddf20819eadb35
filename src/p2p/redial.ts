/**
 * Addresses the node keeps connected (bootnodes, saved peers) and their redial schedule:
 * exponential backoff with jitter, reset by a successful session, abandoned for errors that
 * cannot heal (a wrong peer id, ourselves).
 */
import type { P2pLogger } from './dispatcher.ts';
import { PeerError } from './errors.ts';
import { MultiaddrError } from './multiaddr.ts';

export interface ReconnectPolicy {
  baseMs?: number;
  maxMs?: number;
}

export interface RedialHooks {
  /** Dials `address`; resolves when a session is up. */
  dial(address: string): Promise<unknown>;
  /** True when a session to the node behind `address` already exists (no dial then). */
  connected(address: string): boolean;
  /** The address was dropped from the set (hopeless or unwanted). */
  dropped(address: string): void;
}

/** A dial that can never succeed: the address does not parse, it is our own, or another node's. */
const hopeless = (e: unknown) =>
  e instanceof MultiaddrError || PeerError.is(e, 'InvalidAddress', 'ConnectSelf', 'PeerIdMismatch');

export class Redialer {
  private readonly wanted = new Map<string, { attempts: number; timer?: NodeJS.Timeout }>();
  private readonly baseMs: number;
  private readonly maxMs: number;
  private stopped = false;

  constructor(
    policy: ReconnectPolicy,
    private readonly hooks: RedialHooks,
    private readonly log: P2pLogger,
  ) {
    this.baseMs = policy.baseMs ?? 1_000;
    this.maxMs = policy.maxMs ?? 60_000;
  }

  has(address: string): boolean {
    return this.wanted.has(address);
  }

  /** Adds `address`; dials at once unless `dialNow` is false. Returns false if already there. */
  want(address: string, dialNow = true): boolean {
    if (this.wanted.has(address) || this.stopped) return false;
    this.wanted.set(address, { attempts: 0 });
    if (dialNow) this.redial(address);
    return true;
  }

  unwant(address: string): void {
    const w = this.wanted.get(address);
    if (!w) return;
    clearTimeout(w.timer);
    this.wanted.delete(address);
    this.hooks.dropped(address);
  }

  /** A session to `address` is up: the next loss starts the backoff from the beginning. */
  succeeded(address: string): void {
    const w = this.wanted.get(address);
    if (w) w.attempts = 0;
  }

  /** The session to `address` ended (or a dial failed): try again later. */
  lost(address: string): void {
    const w = this.wanted.get(address);
    if (!w || w.timer || this.stopped) return;
    const delay = Math.min(this.maxMs, this.baseMs * 2 ** Math.min(w.attempts, 16));
    const jittered = Math.round(delay * (0.75 + Math.random() * 0.5));
    w.timer = setTimeout(() => {
      w.timer = undefined;
      this.redial(address);
    }, jittered);
    w.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    for (const w of this.wanted.values()) clearTimeout(w.timer);
    this.wanted.clear();
  }

  private redial(address: string): void {
    const w = this.wanted.get(address);
    if (!w || this.stopped || this.hooks.connected(address)) return;
    w.attempts++;
    this.hooks.dial(address).catch((e) => {
      const msg = (e as Error).message;
      this.log.debug({ address, attempt: w.attempts, err: msg }, 'p2p redial failed');
      if (hopeless(e)) this.unwant(address);
      else this.lost(address);
    });
  }
}
