/**
 * One peer session above secio: a yamux session whose streams each carry one tentacle protocol.
 * Only the dialing side opens protocol streams (as in Fiber); the listening side answers the
 * selection. After selection each stream carries u32-BE length-delimited messages of at most
 * 130 KiB.
 */
import { P2pError } from './errors.ts';
import { FrameDecoder, lengthPrefixed } from './framing.ts';
import {
  DEFAULT_VERSIONS,
  decodeProtocolInfo,
  encodeProtocolInfo,
  MAX_PROTOCOL_FRAME,
  MAX_SELECT_FRAME,
  protocolName,
  selectVersion,
} from './protocol-select.ts';
import type { SecureConn } from './secio/handshake.ts';
import { YamuxSession, type YamuxStream } from './yamux.ts';

export interface SessionHandlers {
  protocolOpen(protocolId: number): void;
  message(protocolId: number, payload: Uint8Array): void;
  /** A protocol stream ended while the session stays (e.g. an oversized frame). */
  protocolClosed(protocolId: number, reason: string): void;
  /** Called once. */
  close(reason: string, err?: Error): void;
}

export interface SessionOptions {
  outbound: boolean;
  protocols: number[];
  handlers: SessionHandlers;
  /** Per-selection limit and the "no protocol open" limit (tentacle: 10 s each). */
  selectTimeoutMs?: number;
  keepAliveMs?: number;
}

interface OpenProtocol {
  stream: YamuxStream;
  decoder: FrameDecoder;
}

export class PeerSession {
  readonly yamux: YamuxSession;
  private readonly open = new Map<number, OpenProtocol>();
  private closed = false;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly selectTimeoutMs: number;

  constructor(
    readonly secure: SecureConn,
    private readonly opts: SessionOptions,
  ) {
    this.selectTimeoutMs = opts.selectTimeoutMs ?? 10_000;
    this.yamux = new YamuxSession({
      client: opts.outbound,
      write: (b) => secure.write(b),
      onStream: (s) => this.accept(s),
      onClose: (err) => this.close(err ? err.message : 'peer closed the session', err),
      keepAliveMs: opts.keepAliveMs,
    });
  }

  /**
   * Starts reading (handlers may fire synchronously from here on: bytes that arrived with the
   * nonce echo are processed at once) and, on the dialing side, opens the protocols.
   */
  start(): void {
    this.secure.attach({
      data: (d) => this.yamux.receive(d),
      close: (err) => this.yamux.connectionClosed(err),
    });
    if (this.closed) return;
    this.after(this.selectTimeoutMs, () => {
      if (this.open.size === 0)
        this.close('no protocol opened in time', new P2pError('Timeout', 'session timeout'));
    });
    if (this.opts.outbound) for (const id of this.opts.protocols) if (!this.closed) this.dial(id);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  isOpen(protocolId: number): boolean {
    return this.open.has(protocolId);
  }

  private after(ms: number, fn: () => void): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    t.unref();
    this.timers.add(t);
    return t;
  }

  private dial(id: number): void {
    const stream = this.yamux.openStream();
    const name = protocolName(id);
    stream.write(lengthPrefixed(encodeProtocolInfo({ name, supportVersions: DEFAULT_VERSIONS })));
    const decoder = new FrameDecoder(MAX_SELECT_FRAME, 'protocol selection');
    const timer = this.after(this.selectTimeoutMs, () => stream.abort());
    let selected = false;
    stream.onEnd = () => {
      clearTimeout(timer);
      if (!selected) this.opts.handlers.protocolClosed(id, 'protocol selection failed');
      else this.protocolEnded(id, 'stream closed by peer');
    };
    stream.onData = (chunk) => {
      if (selected) return;
      decoder.push(chunk);
      try {
        const frame = decoder.next();
        if (!frame) return;
        const reply = decodeProtocolInfo(frame);
        clearTimeout(timer);
        if (reply.name !== name) {
          // tentacle closes the whole session when the reply names another protocol.
          this.close(`protocol selection answered '${reply.name}' for '${name}'`);
          return;
        }
        if (reply.supportVersions.length === 0) {
          stream.abort();
          return;
        }
        selected = true;
        this.activate(id, stream, decoder.drain());
      } catch (e) {
        clearTimeout(timer);
        this.fatal(e as Error);
      }
    };
  }

  private accept(stream: YamuxStream): void {
    const decoder = new FrameDecoder(MAX_SELECT_FRAME, 'protocol selection');
    const timer = this.after(this.selectTimeoutMs, () => stream.abort());
    let done = false;
    stream.onEnd = () => clearTimeout(timer);
    stream.onData = (chunk) => {
      if (done) return;
      decoder.push(chunk);
      try {
        const frame = decoder.next();
        if (!frame) return;
        done = true;
        clearTimeout(timer);
        const asked = decodeProtocolInfo(frame);
        const id = this.opts.protocols.find((p) => protocolName(p) === asked.name);
        const version = id === undefined ? undefined : selectVersion(DEFAULT_VERSIONS, asked.supportVersions);
        const ok = id !== undefined && version !== undefined && !this.open.has(id);
        stream.write(
          lengthPrefixed(encodeProtocolInfo({ name: asked.name, supportVersions: ok ? [version!] : [] })),
        );
        if (!ok) {
          stream.abort();
          return;
        }
        this.activate(id!, stream, decoder.drain());
      } catch (e) {
        this.fatal(e as Error);
      }
    };
  }

  private activate(id: number, stream: YamuxStream, leftover: Uint8Array): void {
    const decoder = new FrameDecoder(MAX_PROTOCOL_FRAME, `protocol ${id}`);
    this.open.set(id, { stream, decoder });
    stream.onEnd = () => this.protocolEnded(id, 'stream closed by peer');
    stream.onData = (chunk) => this.onProtocolData(id, chunk);
    this.opts.handlers.protocolOpen(id);
    if (leftover.length > 0) this.onProtocolData(id, leftover);
  }

  private onProtocolData(id: number, chunk: Uint8Array): void {
    const p = this.open.get(id);
    if (!p || this.closed) return;
    p.decoder.push(chunk);
    for (;;) {
      let frame: Uint8Array | null;
      try {
        frame = p.decoder.next();
      } catch (e) {
        // tentacle closes the protocol stream on an oversized frame.
        p.stream.abort();
        this.protocolEnded(id, (e as Error).message);
        return;
      }
      if (!frame || this.closed || !this.open.has(id)) return;
      this.opts.handlers.message(id, frame);
    }
  }

  private protocolEnded(id: number, reason: string): void {
    const p = this.open.get(id);
    if (!p) return;
    this.open.delete(id);
    if (!p.stream.reset) p.stream.abort();
    this.opts.handlers.protocolClosed(id, reason);
  }

  /** Sends one message on an open protocol; throws when closed or over 130 KiB. */
  send(protocolId: number, payload: Uint8Array): void {
    const p = this.open.get(protocolId);
    if (!p || this.closed) throw new P2pError('Closed', `protocol ${protocolId} is not open`);
    checkFrameSize(payload);
    p.stream.write(lengthPrefixed(payload));
  }

  /**
   * Writes now what `send` has queued in this tick (each stream's Data frames, then one sealed
   * frame) instead of at the microtasks that would: the output gate uses it so that messages
   * to peers reach their sockets before the RPC output released with them (`durability.ts`).
   * Bytes beyond a stream's send window stay queued, as always.
   */
  flushWrites(): void {
    if (this.closed) return;
    for (const p of this.open.values()) p.stream.flush();
    this.secure.flush();
  }

  /** Bytes queued on a protocol stream but not yet allowed by the peer's window. */
  backlog(protocolId: number): number {
    return this.open.get(protocolId)?.stream.pendingBytes ?? 0;
  }

  private fatal(err: Error): void {
    this.close(err.message, err);
  }

  /** Orderly close (FIN, GoAway) or, with `err`, a teardown; reports `reason` once. */
  close(reason: string, err?: Error): void {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    if (!this.yamux.isClosed) {
      if (err) this.yamux.fail(err);
      else this.yamux.close();
    }
    if (err) this.secure.destroy(err);
    else this.secure.end();
    this.open.clear();
    this.opts.handlers.close(reason, err);
  }
}

/** A protocol message fits one tentacle frame (130 KiB) or is refused before it is queued. */
export function checkFrameSize(payload: Uint8Array): void {
  if (payload.length > MAX_PROTOCOL_FRAME) {
    throw new P2pError('FrameTooLarge', `message of ${payload.length} bytes exceeds ${MAX_PROTOCOL_FRAME}`);
  }
}
