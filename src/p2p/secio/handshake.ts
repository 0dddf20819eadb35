/**
 * The secio handshake over a raw connection (tentacle-secio 0.6.7, `docs/reference/
 * tentacle-protocol.md` §2): both sides send Propose at once, then Exchange, verify, derive keys,
 * and echo each other's nonce as the first encrypted frame. Symmetric: there is no initiator.
 * Returns a SecureConn carrying plaintext as a byte stream (frame boundaries mean nothing).
 */
import { randomBytes } from 'node:crypto';
import { equalBytes } from '../../codec/index.ts';
import type { RawConn } from '../conn.ts';
import { P2pError } from '../errors.ts';
import { FrameDecoder, lengthPrefixed } from '../framing.ts';
import {
  CIPHERS,
  type CipherAlg,
  DEFAULT_PROPOSAL,
  EXCHANGES,
  type ExchangeAlg,
  exchangeDigest,
  generateEphemeral,
  HASHES,
  type HashAlg,
  ordering,
  selectBest,
  sharedSecret,
  signExchange,
  splitKeys,
  verifyExchange,
} from './algorithms.ts';
import { FrameCipher, TAG_LEN } from './cipher.ts';
import { decodeExchange, decodePropose, encodeExchange, encodePropose, type Propose } from './messages.ts';

/** tentacle's default `max_frame_length`, for encrypted frames. */
export const MAX_SECIO_FRAME = 8 * 1024 * 1024;
/**
 * Handshake frames (Propose, Exchange, the echo) are a few hundred bytes; tentacle would accept
 * 8 MiB, but a stranger should not make us buffer that much before proving anything.
 */
export const MAX_HANDSHAKE_FRAME = 64 * 1024;
export const HANDSHAKE_TIMEOUT_MS = 10_000;

export interface HandshakeOptions {
  secretKey: Uint8Array;
  publicKey: Uint8Array;
  timeoutMs?: number;
  /** Overrides for tests: our lists and fixed randomness. */
  proposal?: { exchanges: string; ciphers: string; hashes: string };
  nonce?: Uint8Array;
  ephemeralSecret?: Uint8Array;
}

export interface Negotiated {
  exchange: ExchangeAlg;
  cipher: CipherAlg;
  hash: HashAlg;
}

/**
 * Reads frames from a RawConn as promises during the handshake; after it, hands the decoder and
 * any bytes already received to the SecureConn.
 */
class HandshakeReader {
  readonly decoder = new FrameDecoder(MAX_HANDSHAKE_FRAME, 'secio');
  private waiter?: { resolve(f: Uint8Array): void; reject(e: Error): void };
  private failure?: Error;

  onData(chunk: Uint8Array): void {
    this.decoder.push(chunk);
    this.pump();
  }

  onClose(err?: Error): void {
    this.fail(new P2pError('Closed', `connection closed during handshake${err ? `: ${err.message}` : ''}`));
  }

  fail(e: Error): void {
    if (!this.failure) this.failure = e;
    const w = this.waiter;
    this.waiter = undefined;
    w?.reject(e);
  }

  private pump(): void {
    if (!this.waiter) return;
    let frame: Uint8Array | null;
    try {
      frame = this.decoder.next();
    } catch (e) {
      this.fail(e as Error);
      return;
    }
    if (frame) {
      const w = this.waiter;
      this.waiter = undefined;
      w.resolve(frame);
    }
  }

  next(): Promise<Uint8Array> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.pump();
    });
  }
}

export interface SecureHandlers {
  data(plaintext: Uint8Array): void;
  close(err?: Error): void;
}

/** The encrypted channel after a successful handshake. */
export class SecureConn {
  private handlers?: SecureHandlers;
  private early: Uint8Array[] = [];
  private pending: Uint8Array[] = [];
  private flushScheduled = false;
  private closed = false;
  private closeErr?: Error;
  private notified = false;
  bytesSent = 0;
  bytesReceived = 0;

  constructor(
    readonly raw: RawConn,
    readonly remotePubkey: Uint8Array,
    readonly negotiated: Negotiated,
    private readonly encrypt: FrameCipher,
    private readonly decrypt: FrameCipher,
    private readonly decoder: FrameDecoder,
    leftover: Uint8Array,
  ) {
    if (leftover.length > 0) this.early.push(leftover);
    raw.attach({
      data: (chunk) => {
        this.decoder.push(chunk);
        this.pump();
      },
      close: (err) => this.finish(err),
    });
    this.pump();
  }

  private pump(): void {
    try {
      for (;;) {
        if (this.closed) return;
        const frame = this.decoder.next();
        if (!frame) return;
        this.bytesReceived += frame.length + 4;
        const plain = this.decrypt.open(frame);
        if (plain.length === 0) continue;
        if (this.handlers) this.handlers.data(plain);
        else this.early.push(plain);
      }
    } catch (e) {
      this.raw.destroy();
      this.finish(e as Error);
    }
  }

  attach(h: SecureHandlers): void {
    this.handlers = h;
    const early = this.early;
    this.early = [];
    for (const c of early) h.data(c);
    if (this.closed && !this.notified) {
      this.notified = true;
      h.close(this.closeErr);
    }
  }

  /**
   * Queues plaintext; writes made in the same tick go out as one encrypted frame (fewer AEAD
   * calls and socket writes under load; the peer treats plaintext as a stream anyway).
   */
  write(plaintext: Uint8Array): void {
    if (this.closed) return;
    this.pending.push(plaintext);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      queueMicrotask(() => this.flush());
    }
  }

  flush(): void {
    this.flushScheduled = false;
    if (this.closed || this.pending.length === 0) return;
    const parts = this.pending;
    this.pending = [];
    // Keep each frame well below the 8 MiB limit.
    const MAX_PLAIN = 1024 * 1024;
    let batch: Uint8Array[] = [];
    let size = 0;
    const send = () => {
      if (size === 0) return;
      const plain = batch.length === 1 ? batch[0]! : Buffer.concat(batch, size);
      const sealed = this.encrypt.seal(plain);
      this.bytesSent += sealed.length + 4;
      this.raw.write(lengthPrefixed(sealed));
      batch = [];
      size = 0;
    };
    for (const p of parts) {
      if (size + p.length > MAX_PLAIN) send();
      batch.push(p);
      size += p.length;
    }
    send();
  }

  /** Flushes and ends the connection. */
  end(): void {
    this.flush();
    this.raw.end();
    this.finish();
  }

  destroy(err?: Error): void {
    this.raw.destroy();
    this.finish(err);
  }

  private finish(err?: Error): void {
    if (this.notified) return;
    this.closed = true;
    this.closeErr ??= err;
    if (this.handlers) {
      this.notified = true;
      this.handlers.close(this.closeErr);
    }
  }

  get isClosed(): boolean {
    return this.closed;
  }
}

/** Runs the handshake; rejects with a P2pError and destroys the connection on any failure. */
export async function secioHandshake(raw: RawConn, opts: HandshakeOptions): Promise<SecureConn> {
  const reader = new HandshakeReader();
  raw.attach({ data: (c) => reader.onData(c), close: (e) => reader.onClose(e) });
  const timeoutMs = opts.timeoutMs ?? HANDSHAKE_TIMEOUT_MS;
  const timer = setTimeout(
    () => reader.fail(new P2pError('Timeout', `secio handshake not finished in ${timeoutMs} ms`)),
    timeoutMs,
  );
  try {
    return await run(raw, reader, opts);
  } catch (e) {
    raw.destroy();
    throw e instanceof P2pError ? e : new P2pError('Malformed', `secio: ${(e as Error).message}`);
  } finally {
    clearTimeout(timer);
  }
}

async function run(raw: RawConn, reader: HandshakeReader, opts: HandshakeOptions): Promise<SecureConn> {
  const lists = opts.proposal ?? DEFAULT_PROPOSAL;
  const nonce = opts.nonce ?? new Uint8Array(randomBytes(16));
  const local: Propose = { rand: nonce, pubkey: opts.publicKey, ...lists };
  const localBytes = encodePropose(local);
  raw.write(lengthPrefixed(localBytes));

  const remoteBytes = await reader.next();
  const remote = decodePropose(remoteBytes);
  // Fiber identities are 33-byte compressed keys; the peer id is computed over these bytes.
  if (remote.pubkey.length !== 33) throw new P2pError('Malformed', 'secio: remote key is not 33 bytes');
  if (equalBytes(remote.pubkey, opts.publicKey))
    throw new P2pError('ConnectSelf', 'secio: connected to self');
  const { ord } = ordering(opts.publicKey, nonce, remote.pubkey, remote.rand);
  const negotiated: Negotiated = {
    exchange: selectBest(ord, lists.exchanges, remote.exchanges, EXCHANGES, 'exchange'),
    cipher: selectBest(ord, lists.ciphers, remote.ciphers, CIPHERS, 'cipher'),
    hash: selectBest(ord, lists.hashes, remote.hashes, HASHES, 'hash'),
  };

  const eph = generateEphemeral(negotiated.exchange, opts.ephemeralSecret);
  const signature = signExchange(exchangeDigest(localBytes, remoteBytes, eph.publicKey), opts.secretKey);
  raw.write(lengthPrefixed(encodeExchange({ epubkey: eph.publicKey, signature })));

  const exchange = decodeExchange(await reader.next());
  verifyExchange(
    exchange.signature,
    exchangeDigest(remoteBytes, localBytes, exchange.epubkey),
    remote.pubkey,
  );
  const shared = sharedSecret(eph, exchange.epubkey);
  const keys = splitKeys(negotiated.cipher, negotiated.hash, shared, ord);
  const encrypt = new FrameCipher(negotiated.cipher, keys.local);
  const decrypt = new FrameCipher(negotiated.cipher, keys.remote);

  // Echo the peer's nonce as its own frame, then read back ours (possibly across frames).
  raw.write(lengthPrefixed(encrypt.seal(remote.rand)));
  const chunks: Uint8Array[] = [];
  let got = 0;
  while (got < nonce.length) {
    const frame = await reader.next();
    if (frame.length < TAG_LEN) throw new P2pError('CryptoError', 'secio: frame too short');
    const plain = decrypt.open(frame);
    chunks.push(plain);
    got += plain.length;
  }
  const echoed = Buffer.concat(chunks);
  if (!equalBytes(echoed.subarray(0, nonce.length), nonce)) {
    throw new P2pError('NonceVerificationFailed', 'secio: the peer did not echo our nonce');
  }
  const leftover = new Uint8Array(echoed.subarray(nonce.length));
  reader.decoder.maxFrame = MAX_SECIO_FRAME;
  return new SecureConn(raw, remote.pubkey, negotiated, encrypt, decrypt, reader.decoder, leftover);
}
