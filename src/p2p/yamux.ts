/**
 * Yamux as tokio-yamux 0.3.18 speaks it (`docs/reference/tentacle-protocol.md` §3): 12-byte
 * big-endian headers, a 256 KiB window per stream, SYN/ACK carried on the first frame of a
 * stream, ping echo on stream 0, GoAway answered with GoAway.
 *
 * Written here rather than taken from npm: the maintained JS implementation
 * (@chainsafe/libp2p-yamux) is bound to libp2p's stream interfaces and its async-iterator
 * plumbing, and auto-tunes windows; the surface tentacle needs is small and synchronous.
 */
import { P2pError } from './errors.ts';
import { ByteQueue } from './framing.ts';

export const HEADER_LEN = 12;
export const INITIAL_WINDOW = 256 * 1024;
const TYPE_DATA = 0;
const TYPE_WINDOW_UPDATE = 1;
const TYPE_PING = 2;
const TYPE_GO_AWAY = 3;
export const FLAG_SYN = 1;
export const FLAG_ACK = 2;
export const FLAG_FIN = 4;
export const FLAG_RST = 8;
export const GO_AWAY_NORMAL = 0;
export const GO_AWAY_PROTOCOL_ERROR = 1;

export interface YamuxHeader {
  version: number;
  type: number;
  flags: number;
  streamId: number;
  length: number;
}

export function encodeHeader(type: number, flags: number, streamId: number, length: number): Uint8Array {
  const b = new Uint8Array(HEADER_LEN);
  const v = new DataView(b.buffer);
  v.setUint8(0, 0);
  v.setUint8(1, type);
  v.setUint16(2, flags, false);
  v.setUint32(4, streamId, false);
  v.setUint32(8, length, false);
  return b;
}

/** Parses and validates a header; throws P2pError('YamuxProtocol') on version, type or size. */
export function decodeHeader(b: Uint8Array): YamuxHeader {
  const v = new DataView(b.buffer, b.byteOffset, HEADER_LEN);
  const h = {
    version: v.getUint8(0),
    type: v.getUint8(1),
    flags: v.getUint16(2),
    streamId: v.getUint32(4),
    length: v.getUint32(8),
  };
  if (h.version !== 0) throw new P2pError('YamuxProtocol', `yamux: unsupported version ${h.version}`);
  if (h.type > TYPE_GO_AWAY) throw new P2pError('YamuxProtocol', `yamux: unknown frame type ${h.type}`);
  if (h.type === TYPE_DATA && h.length > INITIAL_WINDOW) {
    throw new P2pError('YamuxProtocol', `yamux: data frame of ${h.length} bytes exceeds the window`);
  }
  return h;
}

export interface YamuxOptions {
  /** The dialing side is the client (odd stream ids); the listener is the server (even ids). */
  client: boolean;
  write(bytes: Uint8Array): void;
  onStream(stream: YamuxStream): void;
  /** Called once when the session ends; `err` is absent for an orderly GoAway. */
  onClose(err?: Error): void;
  /** Ping interval; an unanswered ping older than this kills the session. 0 disables. */
  keepAliveMs?: number;
  /** Streams the peer may have open at once (tentacle allows 65,535; Fiber uses two). */
  maxStreams?: number;
  /** Outbound bytes a peer may leave undrained before the session is killed (tentacle: 24 MiB). */
  maxPendingSend?: number;
}

export class YamuxStream {
  private sendWindow = INITIAL_WINDOW;
  private recvWindow = INITIAL_WINDOW;
  private consumed = 0;
  private pending: Uint8Array[] = [];
  private flushScheduled = false;
  pendingBytes = 0;
  /** SYN (opener) or ACK (acceptor) still to ride on the first frame we send. */
  private firstFlags: number;
  private localFin = false;
  private finQueued = false;
  remoteFin = false;
  reset = false;
  onData?: (chunk: Uint8Array) => void;
  /** Called once when the stream ends: remote FIN (`'fin'`) or reset (`'reset'`). */
  onEnd?: (how: 'fin' | 'reset') => void;

  constructor(
    private readonly session: YamuxSession,
    readonly id: number,
    opener: boolean,
  ) {
    this.firstFlags = opener ? FLAG_SYN : FLAG_ACK;
  }

  private takeFlags(extra = 0): number {
    const f = this.firstFlags | extra;
    this.firstFlags = 0;
    return f;
  }

  /** Sends the bare SYN or ACK (WindowUpdate, delta 0) as tentacle does on open/accept. */
  announce(): void {
    this.session.send(encodeHeader(TYPE_WINDOW_UPDATE, this.takeFlags(), this.id, 0));
  }

  /**
   * Queues data; writes made in the same tick leave as few Data frames as the window allows
   * (one header for many small messages).
   */
  write(data: Uint8Array): void {
    if (this.localFin || this.reset)
      throw new P2pError('Closed', `yamux: stream ${this.id} is closed for writing`);
    if (data.length === 0) return;
    this.pending.push(data);
    this.pendingBytes += data.length;
    this.session.addPending(data.length);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      queueMicrotask(() => {
        this.flushScheduled = false;
        this.flush();
      });
    }
  }

  /** Sends as much pending data as the peer's window allows. */
  flush(): void {
    while (this.pendingBytes > 0 && this.sendWindow > 0 && !this.reset && !this.session.isClosed) {
      const n = Math.min(this.pendingBytes, this.sendWindow, INITIAL_WINDOW);
      this.session.send(encodeHeader(TYPE_DATA, this.takeFlags(), this.id, n));
      let left = n;
      while (left > 0) {
        const head = this.pending[0]!;
        if (head.length <= left) {
          this.pending.shift();
          this.session.send(head);
          left -= head.length;
        } else {
          this.session.send(head.subarray(0, left));
          this.pending[0] = head.subarray(left);
          left = 0;
        }
      }
      this.sendWindow -= n;
      this.pendingBytes -= n;
      this.session.addPending(-n);
    }
    if (this.finQueued && this.pendingBytes === 0 && !this.localFin && !this.reset) {
      this.localFin = true;
      this.session.send(encodeHeader(TYPE_WINDOW_UPDATE, this.takeFlags(FLAG_FIN), this.id, 0));
      this.maybeForget();
    }
  }

  /** Half-closes after pending data is sent (tentacle reads a FIN as the end of the stream). */
  close(): void {
    if (this.localFin || this.reset) return;
    this.finQueued = true;
    this.flush();
  }

  /** Aborts the stream (RST); pending data is discarded. */
  abort(): void {
    if (this.reset) return;
    this.session.addPending(-this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    this.reset = true;
    this.session.send(encodeHeader(TYPE_WINDOW_UPDATE, this.takeFlags(FLAG_RST), this.id, 0));
    this.session.forget(this.id);
    this.end('reset');
  }

  private ended = false;
  /** @internal */
  end(how: 'fin' | 'reset'): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd?.(how);
  }

  private maybeForget(): void {
    if (this.localFin && this.remoteFin) this.session.forget(this.id);
  }

  /** @internal a frame for this stream arrived. */
  handle(h: YamuxHeader, body: Uint8Array | null): void {
    if (h.type === TYPE_WINDOW_UPDATE) {
      if (this.sendWindow + h.length > 0xffff_ffff)
        throw new P2pError('YamuxProtocol', 'yamux: window overflow');
      this.sendWindow += h.length;
    }
    if (body && body.length > 0) {
      if (body.length > this.recvWindow) {
        this.session.protocolError(`yamux: stream ${this.id} received ${body.length} bytes over its window`);
        return;
      }
      this.recvWindow -= body.length;
      if (!this.remoteFin && !this.reset) this.onData?.(body);
      // Data is handed on synchronously, so it counts as read at once (hashicorp rule: update
      // the window when at least half of it has been consumed).
      this.consumed += body.length;
      if (this.consumed >= INITIAL_WINDOW / 2 && !this.reset) {
        this.session.send(encodeHeader(TYPE_WINDOW_UPDATE, this.takeFlags(), this.id, this.consumed));
        this.recvWindow += this.consumed;
        this.consumed = 0;
      }
    }
    if (h.flags & FLAG_RST) {
      this.reset = true;
      this.session.addPending(-this.pendingBytes);
      this.pending = [];
      this.pendingBytes = 0;
      this.session.forget(this.id);
      this.end('reset');
      return;
    }
    if (h.flags & FLAG_FIN && !this.remoteFin) {
      this.remoteFin = true;
      this.maybeForget();
      this.end('fin');
    }
    if (h.type === TYPE_WINDOW_UPDATE) this.flush();
  }
}

export class YamuxSession {
  private readonly queue = new ByteQueue();
  private readonly streams = new Map<number, YamuxStream>();
  private nextId: number;
  private pingId = 0;
  private pingSentAt?: number;
  private readonly timer?: NodeJS.Timeout;
  private goAwaySent = false;
  private closed = false;
  private pendingSend = 0;
  private readonly maxStreams: number;
  private readonly maxPendingSend: number;
  /** Header of a Data frame whose body has not fully arrived. */
  private partial?: YamuxHeader;

  constructor(private readonly opts: YamuxOptions) {
    this.nextId = opts.client ? 1 : 2;
    this.maxStreams = opts.maxStreams ?? 64;
    this.maxPendingSend = opts.maxPendingSend ?? 24 * 1024 * 1024;
    const every = opts.keepAliveMs ?? 30_000;
    if (every > 0) {
      this.timer = setInterval(() => this.keepAlive(every), every);
      this.timer.unref();
    }
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get streamCount(): number {
    return this.streams.size;
  }

  /** @internal */
  send(bytes: Uint8Array): void {
    if (!this.closed) this.opts.write(bytes);
  }

  /** @internal */
  forget(id: number): void {
    this.streams.delete(id);
  }

  /** @internal */
  addPending(n: number): void {
    this.pendingSend += n;
    if (this.pendingSend > this.maxPendingSend) {
      this.fail(new P2pError('YamuxProtocol', `yamux: peer left ${this.pendingSend} bytes undrained`));
    }
  }

  openStream(): YamuxStream {
    if (this.closed || this.goAwaySent) throw new P2pError('Closed', 'yamux: session is closing');
    const id = this.nextId;
    this.nextId += 2;
    const s = new YamuxStream(this, id, true);
    this.streams.set(id, s);
    s.announce();
    return s;
  }

  /** Feeds plaintext from the secure channel; violations end the session. */
  receive(chunk: Uint8Array): void {
    if (this.closed) return;
    this.queue.push(chunk);
    try {
      while (!this.closed) {
        let h = this.partial;
        if (!h) {
          if (this.queue.length < HEADER_LEN) return;
          h = decodeHeader(this.queue.take(HEADER_LEN));
        }
        if (h.type === TYPE_DATA) {
          if (this.queue.length < h.length) {
            this.partial = h;
            return;
          }
          this.partial = undefined;
          this.handleFrame(h, this.queue.take(h.length));
        } else {
          this.handleFrame(h, null);
        }
      }
    } catch (e) {
      this.fail(e instanceof P2pError ? e : new P2pError('YamuxProtocol', String(e)));
    }
  }

  private handleFrame(h: YamuxHeader, body: Uint8Array | null): void {
    if (h.type === TYPE_PING) {
      if (h.flags & FLAG_SYN) this.send(encodeHeader(TYPE_PING, FLAG_ACK, 0, h.length));
      else if (h.flags & FLAG_ACK && h.length === this.pingId) this.pingSentAt = undefined;
      return;
    }
    if (h.type === TYPE_GO_AWAY) {
      this.goAway(GO_AWAY_NORMAL);
      const err =
        h.length === GO_AWAY_NORMAL
          ? undefined
          : new P2pError('YamuxProtocol', `yamux: peer sent GoAway(${h.length})`);
      this.terminate(err);
      return;
    }
    let s = this.streams.get(h.streamId);
    if (h.flags & FLAG_SYN) {
      if (s || h.streamId === 0) {
        this.protocolError(`yamux: duplicate or invalid SYN for stream ${h.streamId}`);
        return;
      }
      if (this.goAwaySent) {
        this.send(encodeHeader(TYPE_WINDOW_UPDATE, FLAG_RST, h.streamId, 0));
        return;
      }
      if (this.streams.size >= this.maxStreams) {
        this.send(encodeHeader(TYPE_WINDOW_UPDATE, FLAG_ACK | FLAG_RST, h.streamId, 0));
        return;
      }
      s = new YamuxStream(this, h.streamId, false);
      this.streams.set(h.streamId, s);
      s.announce();
      this.opts.onStream(s);
    }
    // Frames for unknown streams are dropped, as tentacle does.
    s?.handle(h, body);
  }

  /** @internal a window violation: GoAway(1) and end. */
  protocolError(message: string): void {
    this.goAway(GO_AWAY_PROTOCOL_ERROR);
    this.terminate(new P2pError('YamuxProtocol', message));
  }

  private keepAlive(every: number): void {
    if (this.closed) return;
    if (this.pingSentAt !== undefined) {
      if (Date.now() - this.pingSentAt >= every)
        this.fail(new P2pError('Timeout', 'yamux: ping not answered'));
      return;
    }
    this.pingId = (this.pingId + 1) >>> 0;
    this.pingSentAt = Date.now();
    this.send(encodeHeader(TYPE_PING, FLAG_SYN, 0, this.pingId));
  }

  goAway(code: number): void {
    if (this.goAwaySent || this.closed) return;
    this.goAwaySent = true;
    this.send(encodeHeader(TYPE_GO_AWAY, 0, 0, code));
  }

  /** Orderly close: FIN on every stream, then GoAway(0); the owner then ends the connection. */
  close(): void {
    if (this.closed) return;
    for (const s of [...this.streams.values()]) s.close();
    this.goAway(GO_AWAY_NORMAL);
    this.terminate();
  }

  /** A fatal error: the session ends without further frames. */
  fail(err: Error): void {
    this.terminate(err);
  }

  /** The underlying connection ended. */
  connectionClosed(err?: Error): void {
    this.terminate(err ?? new P2pError('Closed', 'connection closed'));
  }

  private terminate(err?: Error): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    const streams = [...this.streams.values()];
    this.streams.clear();
    for (const s of streams) {
      s.reset = true;
      s.end('reset');
    }
    this.opts.onClose(err);
  }
}
