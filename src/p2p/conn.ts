/**
 * A raw byte connection: a TCP socket or a WebSocket carrying Binary messages, both seen as one
 * byte stream (WebSocket message boundaries carry no meaning: the reference may coalesce frames).
 * Data arriving before a consumer attaches is buffered.
 */
import type net from 'node:net';
import type { WebSocket } from 'ws';

export interface ConnHandlers {
  data(chunk: Uint8Array): void;
  close(err?: Error): void;
}

export abstract class RawConn {
  /**
   * Bytes we may have queued for a peer that does not read (tentacle kills a session whose send
   * buffer passes 24 MiB). Past it the connection is torn down: yamux windows bound stream data,
   * but a peer could still make us answer pings or stream requests without ever reading.
   */
  static maxBuffered = 24 * 1024 * 1024;
  private handlers?: ConnHandlers;
  private early: Uint8Array[] = [];
  private closed = false;
  private closeErr?: Error;

  constructor(
    readonly transport: 'tcp' | 'ws',
    /** Remote multiaddr, e.g. `/ip4/127.0.0.1/tcp/50012` (plus `/ws` for WebSocket). */
    readonly remoteAddr: string,
  ) {}

  abstract write(bytes: Uint8Array): void;
  /** Ends gracefully after pending writes flush. */
  abstract end(): void;
  /** Tears down at once. */
  abstract destroy(): void;

  attach(handlers: ConnHandlers): void {
    this.handlers = handlers;
    for (const c of this.early) handlers.data(c);
    this.early = [];
    if (this.closed) handlers.close(this.closeErr);
  }

  protected emitData(chunk: Uint8Array): void {
    if (this.closed || chunk.length === 0) return;
    if (this.handlers) this.handlers.data(chunk);
    else this.early.push(chunk);
  }

  /** Tears down when the peer leaves more than `maxBuffered` bytes unread. */
  protected overBuffered(buffered: number): boolean {
    if (buffered <= RawConn.maxBuffered) return false;
    this.destroyWith(new Error(`peer left ${buffered} bytes unread`));
    return true;
  }

  protected abstract destroyWith(err: Error): void;

  protected emitClose(err?: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.closeErr = err;
    this.handlers?.close(err);
  }

  get isClosed(): boolean {
    return this.closed;
  }
}

function ipAddr(host: string | undefined, port: number | undefined): string {
  const h = (host ?? '0.0.0.0').replace(/^::ffff:/, '');
  return `${h.includes(':') ? '/ip6' : '/ip4'}/${h}/tcp/${port ?? 0}`;
}

export class TcpConn extends RawConn {
  constructor(
    private readonly socket: net.Socket,
    initial?: Uint8Array,
  ) {
    super('tcp', ipAddr(socket.remoteAddress, socket.remotePort));
    socket.setNoDelay(true);
    if (initial) this.emitData(initial);
    socket.on('data', (d: Buffer) => this.emitData(new Uint8Array(d.buffer, d.byteOffset, d.length)));
    socket.on('error', (e) => this.emitClose(e));
    socket.on('close', () => this.emitClose());
  }

  write(bytes: Uint8Array): void {
    if (this.socket.destroyed || this.overBuffered(this.socket.writableLength)) return;
    this.socket.write(bytes);
  }

  protected destroyWith(err: Error): void {
    this.socket.destroy();
    this.emitClose(err);
  }

  end(): void {
    this.socket.end();
    // A peer that never closes its side must not keep the socket alive.
    setTimeout(() => this.socket.destroy(), 2000).unref();
  }

  destroy(): void {
    this.socket.destroy();
    this.emitClose();
  }
}

export class WsConn extends RawConn {
  constructor(
    private readonly ws: WebSocket,
    remoteAddr: string,
  ) {
    super('ws', remoteAddr);
    ws.binaryType = 'nodebuffer';
    ws.on('message', (data, isBinary) => {
      // Text messages are ignored, as tentacle does.
      if (!isBinary) return;
      const parts = Array.isArray(data) ? data : [data as Buffer];
      for (const d of parts) {
        const b = d instanceof ArrayBuffer ? Buffer.from(d) : (d as Buffer);
        this.emitData(new Uint8Array(b.buffer, b.byteOffset, b.length));
      }
    });
    ws.on('error', (e) => this.emitClose(e));
    ws.on('close', () => this.emitClose());
  }

  write(bytes: Uint8Array): void {
    // Never send empty Binary messages: the reference's reader can stall on them.
    if (bytes.length === 0 || this.ws.readyState !== this.ws.OPEN) return;
    if (this.overBuffered(this.ws.bufferedAmount)) return;
    this.ws.send(bytes, { binary: true });
  }

  protected destroyWith(err: Error): void {
    this.ws.terminate();
    this.emitClose(err);
  }

  end(): void {
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close();
    setTimeout(() => this.ws.terminate(), 2000).unref();
  }

  destroy(): void {
    this.ws.terminate();
    this.emitClose();
  }
}

export { ipAddr as socketMultiaddr };

/** An in-process connection pair (tests, fuzzing): what one side writes the other receives. */
export class MemoryConn extends RawConn {
  peer?: MemoryConn;
  /** Every chunk written, for inspection by tests. */
  readonly written: Uint8Array[] = [];

  write(bytes: Uint8Array): void {
    if (this.isClosed) return;
    const copy = bytes.slice();
    this.written.push(copy);
    const peer = this.peer;
    queueMicrotask(() => peer?.receive(copy));
  }

  protected destroyWith(err: Error): void {
    this.emitClose(err);
  }

  /** Injects bytes as if they came from the network. */
  receive(bytes: Uint8Array): void {
    this.emitData(bytes);
  }

  end(): void {
    this.destroy();
  }

  destroy(): void {
    if (this.isClosed) return;
    this.emitClose();
    const peer = this.peer;
    queueMicrotask(() => peer?.destroy());
  }
}

export function memoryPair(): [MemoryConn, MemoryConn] {
  const a = new MemoryConn('tcp', '/ip4/127.0.0.1/tcp/1');
  const b = new MemoryConn('tcp', '/ip4/127.0.0.1/tcp/2');
  a.peer = b;
  b.peer = a;
  return [a, b];
}
