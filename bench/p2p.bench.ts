/**
 * `npm run bench:p2p`: messages/s and MB/s through one encrypted session (secio ChaCha20-Poly1305
 * + yamux + /p2p/42 framing) between two PeerManagers on loopback, over TCP and WebSocket, for
 * several message sizes; plus session set-up (dial → Fiber protocol open) per second. Both ends
 * run in this one process, so the figures include the receiver's work.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { identityFromSecret } from '../src/crypto/identity.ts';
import { createPeerManager, type PeerManager } from '../src/p2p/peer-manager.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CHAIN = new Uint8Array(32).fill(1);

async function manager(): Promise<PeerManager> {
  const pm = createPeerManager({
    identity: identityFromSecret(secp256k1.utils.randomSecretKey()),
    listenAddr: '/ip4/127.0.0.1/tcp/0',
    chainHash: CHAIN,
  });
  await pm.start();
  return pm;
}

const tick = () => new Promise((r) => setImmediate(r));

async function throughput(a: PeerManager, b: PeerManager, size: number) {
  let received = 0;
  let receivedBytes = 0;
  const off = b.onMessage('TxAbort', (_from, m) => {
    received++;
    receivedBytes += m.raw.length + 4;
  });
  const raw = new Uint8Array(size - 4).fill(7); // 4 bytes of union header make `size`
  const msg = { type: 'TxAbort' as const, raw };
  const to = b.identity.pubkeyHex;
  // Keep about 4 MiB in flight: enough to fill the pipe, bounded like a real sender would be.
  const inflight = Math.min(4096, Math.max(8, Math.floor((4 * 1024 * 1024) / size)));
  let sent = 0;
  const run = async (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      while (sent - received < inflight) {
        a.send(to, msg);
        sent++;
      }
      await tick();
    }
    while (received < sent) await tick();
  };
  await run(300); // warm-up
  received = 0;
  receivedBytes = 0;
  sent = 0;
  const start = performance.now();
  await run(SECONDS * 1000);
  const secs = (performance.now() - start) / 1000;
  off();
  return { msgs: received / secs, mbps: receivedBytes / secs / 1e6 };
}

async function setupRate(a: PeerManager, b: PeerManager) {
  const addr = b.listeningAddrs()[0]!;
  let n = 0;
  const start = performance.now();
  const end = start + SECONDS * 1000;
  while (performance.now() < end) {
    await a.connect(addr, { save: false });
    await a.disconnect(b.identity.pubkeyHex);
    while (b.peersCount > 0) await tick();
    n++;
  }
  return n / ((performance.now() - start) / 1000);
}

const rows: string[] = [];
for (const transport of ['tcp', 'ws'] as const) {
  const a = await manager();
  const b = await manager();
  await a.connect(b.listeningAddrs()[transport === 'tcp' ? 0 : 1]!, { save: false });
  while (!a.peerInit(b.identity.pubkeyHex) || !b.peerInit(a.identity.pubkeyHex)) await tick();
  const sizes = transport === 'tcp' ? [64, 1024, 16 * 1024, 128 * 1024] : [1024, 128 * 1024];
  for (const size of sizes) {
    const r = await throughput(a, b, size);
    rows.push(
      `${transport.padEnd(4)} ${String(size).padStart(7)} B  ${Math.round(r.msgs).toLocaleString('en').padStart(10)} msg/s  ${r.mbps.toFixed(1).padStart(7)} MB/s`,
    );
  }
  if (transport === 'tcp') {
    await a.disconnect(b.identity.pubkeyHex);
    while (b.peersCount > 0) await tick();
    rows.push(
      `tcp  session set-up (dial, secio, yamux, /p2p/42 open, close): ${(await setupRate(a, b)).toFixed(0)} /s`,
    );
  }
  await a.stop();
  await b.stop();
}
console.log(`p2p bench (${SECONDS} s per row; one encrypted session, both ends in one process)`);
for (const r of rows) console.log(r);
