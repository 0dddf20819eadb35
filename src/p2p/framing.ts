/**
 * Byte accumulation and u32 big-endian length-delimited framing, used at three levels: secio
 * frames on the socket, selection/protocol messages on a yamux stream. Chunks arrive with
 * arbitrary boundaries (TCP, or WebSocket messages that may coalesce frames), so everything is
 * reassembled here.
 */
import { P2pError } from './errors.ts';

export class ByteQueue {
  private chunks: Uint8Array[] = [];
  private head = 0; // consumed bytes of chunks[0]
  length = 0;

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.length += chunk.length;
  }

  /** Copies the first `n` bytes without consuming them (n ≤ length). */
  peek(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let at = 0;
    let head = this.head;
    for (const c of this.chunks) {
      if (at >= n) break;
      const take = Math.min(c.length - head, n - at);
      out.set(c.subarray(head, head + take), at);
      at += take;
      head = 0;
    }
    return out;
  }

  /** Removes and returns the first `n` bytes (n ≤ length). */
  take(n: number): Uint8Array {
    const first = this.chunks[0];
    if (first && first.length - this.head >= n) {
      // Fast path: the bytes sit in one chunk.
      const out = first.subarray(this.head, this.head + n);
      this.head += n;
      if (this.head === first.length) {
        this.chunks.shift();
        this.head = 0;
      }
      this.length -= n;
      return out;
    }
    const out = new Uint8Array(n);
    let at = 0;
    while (at < n) {
      const c = this.chunks[0]!;
      const take = Math.min(c.length - this.head, n - at);
      out.set(c.subarray(this.head, this.head + take), at);
      at += take;
      this.head += take;
      if (this.head === c.length) {
        this.chunks.shift();
        this.head = 0;
      }
    }
    this.length -= n;
    return out;
  }

  takeAll(): Uint8Array {
    return this.take(this.length);
  }
}

/** Splits a byte stream into u32-BE-length-prefixed frames of at most `maxFrame` bytes. */
export class FrameDecoder {
  private readonly queue = new ByteQueue();

  constructor(
    /** May be raised once a phase with small messages (the handshake) is over. */
    public maxFrame: number,
    private readonly what: string,
  ) {}

  push(chunk: Uint8Array): void {
    this.queue.push(chunk);
  }

  /** The next complete frame, or null; throws P2pError('FrameTooLarge') past the limit. */
  next(): Uint8Array | null {
    if (this.queue.length < 4) return null;
    const h = this.queue.peek(4);
    const len = ((h[0]! << 24) | (h[1]! << 16) | (h[2]! << 8) | h[3]!) >>> 0;
    if (len > this.maxFrame) {
      throw new P2pError('FrameTooLarge', `${this.what}: frame of ${len} bytes exceeds ${this.maxFrame}`);
    }
    if (this.queue.length < 4 + len) return null;
    this.queue.take(4);
    return this.queue.take(len);
  }

  /** Bytes received but not yet framed (handed on when a stream switches codec). */
  get buffered(): number {
    return this.queue.length;
  }

  drain(): Uint8Array {
    return this.queue.takeAll();
  }
}

export function lengthPrefixed(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + payload.length);
  new DataView(out.buffer).setUint32(0, payload.length, false);
  out.set(payload, 4);
  return out;
}
