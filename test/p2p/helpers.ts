/** Shared helpers for the P2P tests: identities, managers on loopback, waiting for events. */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { identityFromSecret, type NodeIdentity } from '../../src/crypto/identity.ts';
import { TcpConn } from '../../src/p2p/conn.ts';
import { createPeerManager, type PeerManager, type PeerManagerOptions } from '../../src/p2p/peer-manager.ts';
import { peerSchema } from '../../src/p2p/peer-store.ts';
import { secioHandshake } from '../../src/p2p/secio/handshake.ts';
import { PeerSession } from '../../src/p2p/session.ts';
import { type Db, openDatabase } from '../../src/store/db.ts';

export const CHAIN_A = new Uint8Array(32).fill(0xaa);
export const CHAIN_B = new Uint8Array(32).fill(0xbb);

export function randomIdentity(): NodeIdentity {
  return identityFromSecret(secp256k1.utils.randomSecretKey());
}

export function tempDb(): { db: Db; file: string; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-p2p-'));
  const file = path.join(dir, 'store.db');
  return { db: openDatabase(file, [peerSchema]), file, dir };
}

const managers: PeerManager[] = [];

export async function startManager(opts: Partial<PeerManagerOptions> = {}): Promise<PeerManager> {
  const pm = createPeerManager({
    identity: opts.identity ?? randomIdentity(),
    listenAddr: '/ip4/127.0.0.1/tcp/0',
    chainHash: CHAIN_A,
    reconnect: { baseMs: 50, maxMs: 200 },
    ...opts,
  });
  await pm.start();
  managers.push(pm);
  return pm;
}

export async function stopAll(): Promise<void> {
  await Promise.all(managers.splice(0).map((m) => m.stop()));
}

/** Resolves when `cond()` holds, polling (no timing assertion: the test's timeout bounds it). */
export async function until(cond: () => boolean, what = 'condition'): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export function tcpAddr(pm: PeerManager): string {
  return pm.listeningAddrs()[0]!;
}

export function wsAddr(pm: PeerManager): string {
  return pm.listeningAddrs()[1]!;
}

/**
 * A hand-driven client session to a listener on loopback (a fresh key): secio, then /p2p/42 and
 * /p2p/43 opened as a dialer; resolves once both are open. `closed` is the reason once it ends.
 */
export async function clientSession(port: number): Promise<{ session: PeerSession; closed(): string }> {
  const id = randomIdentity();
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  const secure = await secioHandshake(new TcpConn(socket), {
    secretKey: id.secretKey,
    publicKey: id.publicKey,
  });
  const open = new Set<number>();
  let closed = '';
  const session = new PeerSession(secure, {
    outbound: true,
    protocols: [42, 43],
    handlers: {
      protocolOpen: (pid) => open.add(pid),
      message: () => {},
      protocolClosed: () => {},
      close: (reason) => {
        closed = reason;
      },
    },
  });
  session.start();
  await until(() => open.size === 2, 'both protocols open');
  return { session, closed: () => closed };
}
