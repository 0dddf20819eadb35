/**
 * The message dispatcher other layers plug into: handlers per FiberMessage kind (/p2p/42) and for
 * gossip (/p2p/43). A failing handler is logged; it never takes the session or the node down.
 */
import type { FiberMessage, FiberMessageKind } from './fiber-message.ts';

/** The subset of pino the P2P layer logs with. */
export interface P2pLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const SILENT: P2pLogger = { debug() {}, info() {}, warn() {}, error() {} };

export type MessageHandler<K extends FiberMessageKind = FiberMessageKind> = (
  pubkey: string,
  message: Extract<FiberMessage, { type: K }>,
) => void | Promise<void>;
export type GossipHandler = (pubkey: string, payload: Uint8Array) => void | Promise<void>;

export class MessageDispatcher {
  private readonly handlers = new Map<FiberMessageKind, Set<MessageHandler>>();
  private readonly gossipHandlers = new Set<GossipHandler>();

  constructor(private readonly log: P2pLogger) {}

  /** Registers a handler for one FiberMessage kind; returns an unsubscribe function. */
  onMessage<K extends FiberMessageKind>(kind: K, handler: MessageHandler<K>): () => void {
    let set = this.handlers.get(kind);
    if (!set) {
      set = new Set();
      this.handlers.set(kind, set);
    }
    const h = handler as unknown as MessageHandler;
    set.add(h);
    return () => set.delete(h);
  }

  onGossip(handler: GossipHandler): () => void {
    this.gossipHandlers.add(handler);
    return () => this.gossipHandlers.delete(handler);
  }

  message(pubkey: string, msg: FiberMessage): void {
    for (const h of this.handlers.get(msg.type) ?? []) this.invoke(pubkey, msg.type, () => h(pubkey, msg));
  }

  gossip(pubkey: string, payload: Uint8Array): void {
    for (const h of this.gossipHandlers) this.invoke(pubkey, 'gossip', () => h(pubkey, payload));
  }

  private invoke(pubkey: string, what: string, fn: () => void | Promise<void>): void {
    const report = (e: unknown) =>
      this.log.error({ pubkey, type: what, err: (e as Error)?.message }, 'p2p message handler failed');
    try {
      const r = fn();
      if (r && typeof (r as Promise<void>).catch === 'function') (r as Promise<void>).catch(report);
    } catch (e) {
      report(e);
    }
  }
}
