/**
 * Hostile input: random and mutated bytes into every decoder, the yamux session, the secio
 * handshake and a live PeerManager. Nothing may throw anything but a P2pError, and a live node
 * drops the connection, logs it and keeps serving others.
 */
import net from 'node:net';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { memoryPair, RawConn, TcpConn } from '../../src/p2p/conn.ts';
import { P2pError } from '../../src/p2p/errors.ts';
import { decodeFiberMessage, encodeFiberMessage } from '../../src/p2p/fiber-message.ts';
import { lengthPrefixed } from '../../src/p2p/framing.ts';
import type { P2pLogger } from '../../src/p2p/peer-manager.ts';
import { decodeProtocolInfo, encodeProtocolInfo } from '../../src/p2p/protocol-select.ts';
import { secioHandshake } from '../../src/p2p/secio/handshake.ts';
import {
  decodeExchange,
  decodePropose,
  encodeExchange,
  encodePropose,
} from '../../src/p2p/secio/messages.ts';
import { PeerSession } from '../../src/p2p/session.ts';
import { encodeHeader, YamuxSession } from '../../src/p2p/yamux.ts';
import { fuzzRuns } from '../helpers/fuzz-runs.ts';
import { randomIdentity, startManager, stopAll, tcpAddr, until, wsAddr } from './helpers.ts';

afterEach(stopAll);

/** Valid encodings to mutate. */
const SAMPLES = {
  propose: encodePropose({
    rand: new Uint8Array(16).fill(7),
    pubkey: randomIdentity().publicKey,
    exchanges: 'X25519',
    ciphers: 'CHACHA20_POLY1305',
    hashes: 'SHA256,SHA512',
  }),
  exchange: encodeExchange({ epubkey: new Uint8Array(32).fill(3), signature: new Uint8Array(70).fill(4) }),
  protocolInfo: encodeProtocolInfo({ name: '/p2p/42', supportVersions: ['0.0.1'] }),
  init: encodeFiberMessage({
    type: 'Init',
    value: { features: new Uint8Array([0x15]), chainHash: new Uint8Array(32) },
  }),
};

/** Random bytes, or a valid sample with bytes flipped, cut or appended. */
function mutated(sample: Uint8Array) {
  return fc.oneof(
    fc.uint8Array({ maxLength: 400 }),
    fc
      .tuple(
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
        fc.nat(),
        fc.uint8Array({ maxLength: 20 }),
      )
      .map(([flips, cut, tail]) => {
        const b = sample.slice();
        for (const [i, v] of flips) b[i % b.length] = v;
        const keep = cut % (b.length + 1);
        return new Uint8Array([...b.subarray(0, cut % 3 === 0 ? b.length : keep), ...tail]);
      }),
  );
}

function onlyP2pErrors(fn: () => unknown): void {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof P2pError)) throw e;
  }
}

describe('decoders never throw anything but P2pError', () => {
  it('Propose, Exchange, ProtocolInfo, FiberMessage', () => {
    fc.assert(
      fc.property(mutated(SAMPLES.propose), (b) => onlyP2pErrors(() => decodePropose(b))),
      { numRuns: fuzzRuns(500) },
    );
    fc.assert(
      fc.property(mutated(SAMPLES.exchange), (b) => onlyP2pErrors(() => decodeExchange(b))),
      { numRuns: fuzzRuns(500) },
    );
    fc.assert(
      fc.property(mutated(SAMPLES.protocolInfo), (b) => onlyP2pErrors(() => decodeProtocolInfo(b))),
      {
        numRuns: fuzzRuns(500),
      },
    );
    fc.assert(
      fc.property(mutated(SAMPLES.init), (b) => onlyP2pErrors(() => decodeFiberMessage(b))),
      { numRuns: fuzzRuns(500) },
    );
  });
});

describe('yamux session under random frames', () => {
  it('never throws; when it ends, it ends with a P2pError', () => {
    const validish = fc
      .array(
        fc.tuple(
          fc.integer({ min: 0, max: 4 }),
          fc.integer({ min: 0, max: 15 }),
          fc.integer({ min: 0, max: 6 }),
          fc.integer({ min: 0, max: 300_000 }),
          fc.uint8Array({ maxLength: 64 }),
        ),
        { maxLength: 12 },
      )
      .map((frames) =>
        frames.map(([type, flags, id, len, body]) =>
          type === 0
            ? new Uint8Array([...encodeHeader(0, flags, id, body.length), ...body])
            : encodeHeader(type, flags, id, len),
        ),
      );
    fc.assert(
      fc.property(
        fc.oneof(validish, fc.array(fc.uint8Array({ maxLength: 100 }), { maxLength: 5 })),
        (chunks) => {
          const ends: unknown[] = [];
          const s = new YamuxSession({
            client: false,
            write: () => {},
            onStream: (st) => {
              st.onData = () => {};
            },
            onClose: (e) => ends.push(e),
            keepAliveMs: 0,
          });
          for (const c of chunks) s.receive(c);
          expect(ends.length).toBeLessThanOrEqual(1);
          if (ends[0] !== undefined) expect(ends[0]).toBeInstanceOf(P2pError);
        },
      ),
      { numRuns: fuzzRuns(500) },
    );
  });
});

describe('secio handshake under hostile peers', () => {
  it('rejects with a P2pError for random and mutated handshake frames', async () => {
    const me = randomIdentity();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          mutated(SAMPLES.propose).map((p) => lengthPrefixed(p)),
          fc
            .tuple(mutated(SAMPLES.propose), mutated(SAMPLES.exchange))
            .map(([p, e]) => new Uint8Array([...lengthPrefixed(p), ...lengthPrefixed(e)])),
        ),
        async (bytes) => {
          const [mine, theirs] = memoryPair();
          const hs = secioHandshake(mine, {
            secretKey: me.secretKey,
            publicKey: me.publicKey,
            timeoutMs: 30,
          });
          theirs.write(bytes);
          const err = await hs.then(
            () => new Error('handshake unexpectedly succeeded'),
            (e) => e,
          );
          expect(err).toBeInstanceOf(P2pError);
          theirs.destroy();
        },
      ),
      { numRuns: fuzzRuns(150) },
    );
  });

  it('refuses a handshake frame above 64 KiB before buffering it', async () => {
    const me = randomIdentity();
    const [mine, theirs] = memoryPair();
    const hs = secioHandshake(mine, { secretKey: me.secretKey, publicKey: me.publicKey, timeoutMs: 1000 });
    theirs.write(new Uint8Array([0, 1, 0, 1])); // announces 65,537 bytes
    await expect(hs).rejects.toMatchObject({ kind: 'FrameTooLarge' });
  });

  it('refuses a peer that signs with another key, and a peer that does not echo the nonce', async () => {
    const me = randomIdentity();
    const other = randomIdentity();
    // The attacker claims `other`'s key but signs with a third key.
    const [mine, theirs] = memoryPair();
    const hs = secioHandshake(mine, { secretKey: me.secretKey, publicKey: me.publicKey, timeoutMs: 500 });
    const liar = secioHandshake(theirs, {
      secretKey: secp256k1.utils.randomSecretKey(),
      publicKey: other.publicKey,
      timeoutMs: 500,
    });
    await expect(hs).rejects.toMatchObject({ kind: 'SignatureVerificationFailed' });
    await expect(liar).rejects.toBeInstanceOf(P2pError);
  });
});

describe('a live PeerManager under attack', () => {
  function recordingLogger() {
    const lines: string[] = [];
    const log: P2pLogger = {
      debug: (o, m) => lines.push(`debug ${m} ${JSON.stringify(o)}`),
      info: (o, m) => lines.push(`info ${m} ${JSON.stringify(o)}`),
      warn: (o, m) => lines.push(`warn ${m} ${JSON.stringify(o)}`),
      error: (o, m) => lines.push(`error ${m} ${JSON.stringify(o)}`),
    };
    return { lines, log };
  }

  async function rawTcp(port: number): Promise<net.Socket> {
    const s = net.connect(port, '127.0.0.1');
    await new Promise((r) => s.once('connect', r));
    return s;
  }

  async function closedByServer(s: net.Socket): Promise<void> {
    s.resume(); // unread data would hold back 'end' and 'close'
    if (s.destroyed) return;
    await new Promise((r) => s.once('close', r));
  }

  it('drops connections sending garbage at every layer, logs them, and keeps serving', async () => {
    const { lines, log } = recordingLogger();
    const server = await startManager({
      logger: log,
      timeouts: { handshakeMs: 300, selectMs: 300, initMs: 300 },
    });
    const port = server.listenPort!;

    // 1. Random bytes instead of a Propose.
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 4, maxLength: 200 }), async (bytes) => {
        const s = await rawTcp(port);
        s.on('error', () => {});
        s.write(bytes);
        await closedByServer(s);
      }),
      { numRuns: fuzzRuns(15) },
    );

    // 2. A completed handshake followed by undecryptable frames.
    const attacker = randomIdentity();
    {
      const s = await rawTcp(port);
      const secure = await secioHandshake(new TcpConn(s), {
        secretKey: attacker.secretKey,
        publicKey: attacker.publicKey,
      });
      secure.raw.write(lengthPrefixed(new Uint8Array(40).fill(1)));
      await closedByServer(s);
    }

    // 3. Valid encryption carrying yamux garbage.
    {
      const s = await rawTcp(port);
      const secure = await secioHandshake(new TcpConn(s), {
        secretKey: attacker.secretKey,
        publicKey: attacker.publicKey,
      });
      secure.attach({ data: () => {}, close: () => {} });
      secure.write(new Uint8Array([9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]));
      await closedByServer(s);
    }

    // 4. Valid yamux and protocol, then FiberMessages that do not decode.
    for (const bad of [
      new Uint8Array([0x13, 0, 0, 0]),
      new Uint8Array([0, 0, 0, 0, 1, 2]),
      new Uint8Array(2),
    ]) {
      const s = await rawTcp(port);
      const secure = await secioHandshake(new TcpConn(s), {
        secretKey: attacker.secretKey,
        publicKey: attacker.publicKey,
      });
      let ended = '';
      const session = new PeerSession(secure, {
        outbound: true,
        protocols: [42],
        handlers: {
          protocolOpen: () => session.send(42, bad),
          message: () => {},
          protocolClosed: () => {},
          close: (reason) => {
            ended = reason;
          },
        },
      });
      session.start();
      await until(() => ended !== '', 'server to drop the session');
    }
    expect(lines.some((l) => l.startsWith('warn p2p inbound handshake failed'))).toBe(true);
    expect(lines.filter((l) => l.startsWith('warn p2p malformed FiberMessage')).length).toBe(3);
    await until(() => server.peersCount === 0);

    // The node still serves an honest peer.
    const honest = await startManager();
    await honest.connect(tcpAddr(server));
    await until(() => server.peerInit(honest.identity.pubkeyHex) !== undefined);
  });

  it('drops WebSocket clients that send garbage, text or oversized messages', async () => {
    const server = await startManager({ timeouts: { handshakeMs: 300 } });
    const url = `ws://127.0.0.1:${server.listenPort}/`;
    const closed = (ws: WebSocket) => new Promise<void>((r) => ws.once('close', () => r()));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 300 }), { minLength: 1, maxLength: 4 }),
        async (msgs) => {
          const ws = new WebSocket(url);
          ws.on('error', () => {});
          await new Promise((r) => ws.once('open', r));
          const done = closed(ws);
          ws.send('hello'); // text is ignored, as tentacle does
          for (const m of msgs) ws.send(m);
          await done;
        },
      ),
      { numRuns: fuzzRuns(10) },
    );
    const big = new WebSocket(url);
    big.on('error', () => {});
    await new Promise((r) => big.once('open', r));
    const done = closed(big);
    big.send(new Uint8Array(9 * 1024 * 1024));
    await done;
    const honest = await startManager();
    await honest.connect(wsAddr(server));
  });

  it('evicts the oldest silent connections of an IP; an honest peer gets in while the rest wait', async () => {
    const server = await startManager();
    const silent: net.Socket[] = [];
    for (let i = 0; i < 70; i++) {
      const s = await rawTcp(server.listenPort!);
      s.on('error', () => {});
      silent.push(s);
    }
    // 16 per IP wait (until the handshake deadline); each newer one evicted the oldest.
    await Promise.all(silent.slice(0, 54).map((s) => closedByServer(s)));
    expect(silent.slice(54).every((s) => !s.destroyed)).toBe(true);
    const honest = await startManager();
    await honest.connect(tcpAddr(server));
    await until(() => server.peerInit(honest.identity.pubkeyHex) !== undefined);
    for (const s of silent) s.destroy();
  });

  it('tears down a peer that makes us answer pings but never reads', async () => {
    const saved = RawConn.maxBuffered;
    RawConn.maxBuffered = 256 * 1024;
    try {
      const { lines, log } = recordingLogger();
      const server = await startManager({ logger: log, timeouts: { selectMs: 60_000 } });
      const id = randomIdentity();
      const s = await rawTcp(server.listenPort!);
      const secure = await secioHandshake(new TcpConn(s), {
        secretKey: id.secretKey,
        publicKey: id.publicKey,
      });
      secure.attach({ data: () => {}, close: () => {} });
      s.pause(); // never read again
      const pings = new Uint8Array(12 * 80_000);
      for (let i = 0; i < 80_000; i++) pings.set(encodeHeader(2, 1, 0, i), 12 * i);
      for (let round = 0; round < 200 && !lines.some((l) => l.includes('unread')); round++) {
        secure.write(pings);
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(lines.some((l) => l.includes('unread'))).toBe(true);
      s.destroy();
    } finally {
      RawConn.maxBuffered = saved;
    }
  });

  it('drops a peer that opens the protocol but never sends Init', async () => {
    const server = await startManager({ timeouts: { initMs: 200 } });
    const reasons: string[] = [];
    server.on('disconnected', (_p, r) => reasons.push(r));
    const id = randomIdentity();
    const s = await rawTcp(server.listenPort!);
    const secure = await secioHandshake(new TcpConn(s), { secretKey: id.secretKey, publicKey: id.publicKey });
    const session = new PeerSession(secure, {
      outbound: true,
      protocols: [42, 43],
      handlers: { protocolOpen: () => {}, message: () => {}, protocolClosed: () => {}, close: () => {} },
    });
    session.start();
    await until(() => reasons.length > 0);
    expect(reasons[0]).toBe('Init message timeout');
    await closedByServer(s);
  });

  it('closes a session whose dialer opens no protocol in time', async () => {
    const server = await startManager({ timeouts: { selectMs: 200 } });
    const id = randomIdentity();
    const s = await rawTcp(server.listenPort!);
    const secure = await secioHandshake(new TcpConn(s), { secretKey: id.secretKey, publicKey: id.publicKey });
    secure.attach({ data: () => {}, close: () => {} });
    await closedByServer(s);
    expect(server.peersCount).toBe(0);
  });
});
